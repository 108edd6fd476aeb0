import { createHash } from 'node:crypto';
import type { Principal } from '../auth/resolver';
import type { ModelPolicy } from '../lib/model-policy';

/**
 * The managed settings Claude Code reads from `GET {base}/managed/settings` when signed in to a
 * gateway: `{uuid, checksum, settings}`, `settings` being a managed-settings.json. Claude Code
 * 2.1.330 sends back `If-None-Match: "sha256:<hex of JSON.stringify(settings)>"`, its own hash
 * of the settings it holds, so the checksum is that hash (seen on the wire, 2026-11-29; shape
 * from github.com/pleaseai/shunt docs/gateway-protocol.md, read 2026-11-29).
 */
export interface ManagedSettings {
  uuid: string;
  checksum: string;
  settings: { availableModels?: string[]; env: Record<string, string> };
}

/**
 * Telemetry through the gateway: Claude Code exports to `{base}/v1/{signal}` with its bearer
 * whatever the endpoint says (the protocol locks it), so these turn it on and name the protocol
 * Keygate reads. Traces are not asked for: Keygate keeps metrics and logs only.
 */
function telemetryEnv(base: string): Record<string, string> {
  return {
    CLAUDE_CODE_ENABLE_TELEMETRY: '1',
    OTEL_METRICS_EXPORTER: 'otlp',
    OTEL_LOGS_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_ENDPOINT: base,
    // The /model picker lists what GET {base}/v1/models answers: the models the caller may use.
    CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: '1',
    // Behind a base URL that is not the provider's, Claude Code turns MCP tool search off unless
    // this is set, "because most proxies do not forward tool_reference blocks"
    // (code.claude.com/docs/en/mcp, "Configure tool search", read 2026-11-29). Keygate forwards
    // bodies and beta headers unchanged, so it keeps tool search on; an admin's value wins.
    ENABLE_TOOL_SEARCH: 'true',
  };
}

/**
 * The caller's model policy as Claude Code's `availableModels` (model ids, and prefixes it
 * matches as version prefixes: settings reference, code.claude.com/docs/en/settings, read
 * 2026-11-29). Keygate's rules all apply at once (account, groups, member, key), so an entry of
 * one list is pushed only where every list allows it; a `family-*` pattern becomes its prefix.
 * Undefined when no rule restricts models. Keygate still refuses a model outside the policy on
 * every call: this only keeps the picker honest.
 */
export function availableModels(policy: ModelPolicy | null): string[] | undefined {
  const lists = policy?.rules.filter((r) => r.allowedModels !== null) ?? [];
  if (!policy || lists.length === 0) return undefined;
  const out = new Set<string>();
  for (const rule of lists)
    for (const entry of rule.allowedModels!) {
      const prefix = entry.endsWith('*') ? entry.slice(0, -1).replace(/[-.@]+$/, '') : null;
      const probe = prefix === null ? entry : entry.slice(0, -1);
      if (policy.allows(probe)) out.add(prefix ?? entry);
    }
  return [...out].sort();
}

/** What a signed-in member's Claude Code is given: their model policy, telemetry to Keygate, the admin's env. */
export function managedSettings(
  principal: Principal,
  base: string,
  adminEnv: Record<string, string>,
): ManagedSettings {
  const models = availableModels(principal.policy);
  const settings = {
    ...(models ? { availableModels: models } : {}),
    // The admin's values win: they may turn telemetry off or tune its export intervals.
    env: { ...telemetryEnv(base), ...adminEnv },
  };
  const checksum = `sha256:${createHash('sha256').update(JSON.stringify(settings)).digest('hex')}`;
  return { uuid: checksum, checksum, settings };
}

/** Whether an If-None-Match header names this checksum (quoted or not, weak or not, in a list). */
export function matches(ifNoneMatch: string | undefined, checksum: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
    .some((t) => t === checksum || t === '*');
}
