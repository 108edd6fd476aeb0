import { createHash } from 'node:crypto';
import { accruedRecord } from '../lib/call-record';
import { SESSION_ENDPOINT } from '../pricing/prices';
import type { ForwardCall } from '../proxy/forward';
import type { SurfaceDeps } from './files-routes';
import { providerReader } from './owned-list';

/**
 * A Managed Agents session's `usage`: running totals over all its turns (input, output, cache
 * reads, cache writes by lifetime), as the provider reports them on the session object
 * (https://platform.claude.com/docs/en/managed-agents/session-observability, and the SDKs'
 * `BetaManagedAgentsSessionUsage`, read 2026-11-25).
 */
interface SessionUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
}

const FIGURES = ['input', 'output', 'cache_read', 'cache_5m', 'cache_1h'] as const;
type Totals = Record<(typeof FIGURES)[number], number>;

const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

function totalsOf(u: SessionUsage): Totals {
  return {
    input: count(u.input_tokens),
    output: count(u.output_tokens),
    cache_read: count(u.cache_read_input_tokens),
    cache_5m: count(u.cache_creation?.ephemeral_5m_input_tokens),
    cache_1h: count(u.cache_creation?.ephemeral_1h_input_tokens),
  };
}

/** The session's model: its agent snapshot names it (a string, or an object with an id). */
function modelOf(session: Record<string, any>): string | null {
  const model = session.agent?.model;
  if (typeof model === 'string') return model;
  return typeof model?.id === 'string' ? model.id : null;
}

/**
 * Records what a session used since Keygate last saw its totals, as one call of the session's
 * creator grouped by the session id (budgets and reports count it like any call). Sessions
 * made outside Keygate have no creator here and are not recorded. Safe to call with every
 * session object that passes through: the totals move by compare and swap.
 */
export async function observeSession(
  d: SurfaceDeps,
  call: ForwardCall,
  session: Record<string, any> | null,
): Promise<void> {
  if (typeof session?.id !== 'string' || !session.usage || typeof session.usage !== 'object') return;
  const accountId = call.principal.key.accountId;
  const owner = (await d.objects.owners(accountId, [session.id])).get(session.id);
  if (owner?.kind !== 'session') return;
  const now = totalsOf(session.usage as SessionUsage);
  const before = (await d.objects.sessionTotals(accountId, session.id)) as Totals | null;
  const grew = FIGURES.map((f) => now[f] - (before?.[f] ?? 0));
  if (grew.every((g) => g <= 0) || grew.some((g) => g < 0)) return;
  if (!(await d.objects.advanceSessionTotals(accountId, session.id, before, now))) return;
  const [input, output, cacheRead, cache5m, cache1h] = grew as [number, number, number, number, number];
  const id = createHash('sha256')
    .update(`${session.id}\n${JSON.stringify(now)}`)
    .digest('hex');
  const ownKey = owner.keyId === call.principal.key.id;
  const record = accruedRecord({
    id: `req_session_${id.slice(0, 32)}`,
    owner: {
      accountId,
      keyId: owner.keyId,
      memberId: owner.memberId,
      app: ownKey ? call.principal.key.app : null,
      environment: ownKey ? call.principal.key.environment : null,
    },
    groupId: session.id,
    endpoint: SESSION_ENDPOINT,
    model: modelOf(session),
    status: 200,
    errorType: null,
    usage: {
      input_tokens: input,
      output_tokens: output,
      cache_read_input_tokens: cacheRead,
      cache_creation_input_tokens: cache5m + cache1h,
      cache_creation: { ephemeral_5m_input_tokens: cache5m, ephemeral_1h_input_tokens: cache1h },
    },
    upstreamMessageId: null,
    latencyMs: 0,
    createdAt: new Date(),
  });
  d.proxy.record(record);
}

/** The session as the provider has it now (null if it does not answer it). */
export function sessionNow(
  d: SurfaceDeps,
  call: ForwardCall,
  id: string,
): Promise<Record<string, any> | null> {
  // Sessions live with the provider key, where their calls go.
  return providerReader(call, d, '/v1/sessions')({ id, upstreamId: null }).then((o) => o ?? null);
}

/** Budgets before a session works (is created, or is sent events): the refusal a call over them gets. */
export async function admitSpend(d: SurfaceDeps, call: ForwardCall): Promise<void> {
  const verdict = await d.proxy.admission?.admitSpend?.(call.principal);
  if (verdict) throw verdict;
}
