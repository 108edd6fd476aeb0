import {
  Keygate,
  type KeygateOptions,
  type Middleware,
  type UsageRecord,
  type UsageSummary,
} from '../src/index';
import type { Stack } from '../../../services/gateway/test/harness';

// The gateway's own harness: a real gateway on loopback, the emulator as the provider, a fresh
// account and key, on TEST_DATABASE_URL (own schema) or the embedded database.
export { expectedColumns, startStack, type Stack } from '../../../services/gateway/test/harness';

export const MODEL = 'claude-opus-4-5';

export function clientFor(stack: Stack, opts: KeygateOptions = {}): Keygate & { records: UsageRecord[] } {
  const records: UsageRecord[] = [];
  const client = new Keygate({
    appKey: stack.appKey,
    baseURL: stack.gateway.url,
    onUsage: (r) => void records.push(r),
    ...opts,
  });
  return Object.assign(client, { records });
}

export type CallRow = Record<string, any>;

/** The gateway's call rows of one group, oldest first. */
export async function groupRows(stack: Stack, groupId: string): Promise<CallRow[]> {
  return (await stack.calls()).filter((r) => r.group_id === groupId);
}

/** What a UsageSummary says about tokens, from the gateway's rows. */
export function summed(rows: CallRow[]): Partial<UsageSummary> {
  const sum = (k: string) => rows.reduce((n, r) => n + Number(r[k]), 0);
  return {
    calls: rows.length,
    input_tokens: sum('input_tokens'),
    output_tokens: sum('output_tokens'),
    cache_creation_input_tokens: sum('cache_creation_input_tokens'),
    cache_read_input_tokens: sum('cache_read_input_tokens'),
    cache_creation: {
      ephemeral_5m_input_tokens: sum('cache_creation_5m_tokens'),
      ephemeral_1h_input_tokens: sum('cache_creation_1h_tokens'),
    },
    server_tool_use: { web_search_requests: sum('web_search_requests') },
  };
}

/** A middleware that keeps the JSON body of every request as sent, for checking what the model was asked. */
export function bodyRecorder() {
  const bodies: Array<Record<string, any>> = [];
  return {
    bodies,
    middleware: (async (request, next) => {
      if (typeof request.body === 'string') bodies.push(JSON.parse(request.body) as Record<string, any>);
      return next(request);
    }) satisfies Middleware,
  };
}
