import type { CallRecord } from '../src/lib/call-record';
import { api, callAt, type SeededAccount, type Stack } from './harness';

/** Six UTC days around the start of US daylight saving time (Sunday 9 March 2025, a 23-hour day in New York). */
export const RANGE = { from: Date.parse('2025-03-06T00:00:00Z'), to: Date.parse('2025-03-12T00:00:00Z') };

export interface ExactnessFixture {
  acct: SeededAccount;
  records: CallRecord[];
  /** Key id → kind ('live' or 'test'): cost reports leave test keys out. */
  keyKinds: Map<string, string>;
  memberIds: string[];
}

/** Every way a call can end: served, refused, failed upstream, cut or abandoned (with estimated output). */
const OUTCOMES: Pick<CallRecord, 'status' | 'errorType' | 'partial' | 'estimated'>[] = [
  { status: 200, errorType: null, partial: false, estimated: false },
  { status: 200, errorType: null, partial: false, estimated: false },
  { status: 200, errorType: null, partial: false, estimated: false },
  { status: 429, errorType: 'rate_limit_error', partial: false, estimated: false },
  { status: 529, errorType: 'overloaded_error', partial: false, estimated: false },
  { status: 504, errorType: 'timeout_error', partial: false, estimated: false },
  { status: 500, errorType: 'api_error', partial: false, estimated: false },
  { status: 400, errorType: 'invalid_request_error', partial: false, estimated: false },
  { status: 200, errorType: 'invalid_tool_use', partial: false, estimated: false },
  { status: 200, errorType: 'client_closed', partial: true, estimated: true },
  { status: 200, errorType: 'api_error', partial: true, estimated: true },
  { status: 499, errorType: 'client_closed', partial: false, estimated: false },
];

const MODELS = ['claude-opus-4-5', 'claude-sonnet-4-5', 'claude-haiku-4-5'];
const GROUPS = ['g-alpha', 'g-beta', 'g-gamma', 'g-delta', null];

/** Calls on the hours where local days begin or clocks change, in New York and Tokyo. */
const EDGES = [
  '2025-03-07T04:59:59Z',
  '2025-03-07T05:00:00Z',
  '2025-03-09T04:59:59Z',
  '2025-03-09T05:00:00Z',
  '2025-03-09T06:59:59Z',
  '2025-03-09T07:00:00Z',
  '2025-03-10T03:59:59Z',
  '2025-03-10T04:00:00Z',
  '2025-03-08T14:59:59Z',
  '2025-03-08T15:00:00Z',
  '2025-03-06T00:00:00Z',
  '2025-03-11T23:59:59Z',
];

/** A small deterministic generator, so a failure can be replayed. */
function lcg(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * An account with three members, their keys (one a test key), an app key without a member,
 * three models and several request groups; 700 calls over six days written through the
 * call-log writer's batch insert (the path every proxied call takes), with every outcome, cache
 * writes (5m and 1h, with and without the breakdown), cache reads, thinking output, web
 * searches, retries, count_tokens calls (not Messages usage) and another account's calls.
 */
export async function seedExactness(stack: Stack): Promise<ExactnessFixture> {
  const acct = await stack.seedAccount({ name: 'Exact Co', trialDays: 0 });
  const other = await stack.seedAccount({ name: 'Other Co' });
  const admin = (path: string, body: object) =>
    api(stack.gateway.url, path, { key: acct.adminKey, body }).then((r) => r.body);
  const memberIds: string[] = [];
  for (const email of ['ann@exact.test', 'ben@exact.test', 'cat@exact.test'])
    memberIds.push((await admin('/v1/organizations/users', { email })).id);
  const specs = [
    { name: 'ann cli', member_id: memberIds[0], app: 'cli', environment: 'dev' },
    { name: 'ben ci', member_id: memberIds[1], app: 'ci', environment: 'prod' },
    { name: 'cat test', member_id: memberIds[2], kind: 'test', app: 'cli', environment: 'dev' },
    { name: 'web app', app: 'web', environment: 'prod' },
  ];
  const keys: { id: string; memberId: string | null; app: string; environment: string; kind: string }[] = [];
  for (const s of specs) {
    const k = await admin('/v1/organizations/api_keys', s);
    keys.push({
      id: k.id,
      memberId: s.member_id ?? null,
      app: s.app,
      environment: s.environment,
      kind: s.kind ?? 'live',
    });
  }
  const rand = lcg(11);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const int = (max: number) => Math.floor(rand() * max);
  const times = [
    ...EDGES.map((e) => Date.parse(e)),
    ...Array.from({ length: 688 }, () => RANGE.from + Math.floor(rand() * (RANGE.to - RANGE.from))),
  ];
  const records: CallRecord[] = times.map((t, i) => {
    const key = pick(keys);
    const outcome = pick(OUTCOMES);
    const refused = outcome.status === 429 && rand() < 0.5;
    const withBreakdown = rand() < 0.8;
    const creation5m = int(3) === 0 ? int(4000) : 0;
    const creation1h = int(4) === 0 ? int(6000) : 0;
    const usage = refused
      ? null
      : {
          input_tokens: int(5000),
          output_tokens: int(3000) + (i % 7 === 0 ? 4096 : 0), // every 7th: a thinking call, its thinking billed as output
          cache_creation_input_tokens: creation5m + creation1h,
          ...(withBreakdown
            ? {
                cache_creation: {
                  ephemeral_5m_input_tokens: creation5m,
                  ephemeral_1h_input_tokens: creation1h,
                },
              }
            : {}),
          cache_read_input_tokens: int(3) === 0 ? int(20_000) : 0,
          ...(int(10) === 0 ? { server_tool_use: { web_search_requests: 1 + int(3) } } : {}),
        };
    return callAt(acct.id, new Date(t).toISOString(), {
      keyId: key.id,
      memberId: key.memberId,
      app: key.app,
      environment: key.environment,
      groupId: pick(GROUPS),
      model: refused && i % 2 ? null : pick(MODELS),
      endpoint: i % 23 === 0 ? 'count_tokens' : 'messages',
      stream: rand() < 0.5,
      ...outcome,
      retryCount: int(4) === 0 ? 1 + int(3) : 0,
      usage: usage as never,
    });
  });
  const foreign = Array.from({ length: 20 }, (_, i) =>
    callAt(other.id, new Date(RANGE.from + i * 7 * 3_600_000).toISOString(), {
      keyId: other.adminKeyId,
      usage: { input_tokens: 777, output_tokens: 1 },
    }),
  );
  for (let i = 0; i < records.length; i += 100)
    await stack.gateway.store.calls.insertBatch(records.slice(i, i + 100));
  await stack.gateway.store.calls.insertBatch(foreign);
  return { acct, records, keyKinds: new Map(keys.map((k) => [k.id, k.kind])), memberIds };
}
