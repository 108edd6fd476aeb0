import { api, callAt, type SeededAccount, type Stack } from './harness';

export interface DashboardFixture {
  acct: SeededAccount;
  alice: { id: string; email: string };
  bob: { id: string; email: string };
  aliceKey: { id: string; secret: string };
  bobKey: { id: string; secret: string };
  appKey: { id: string; secret: string };
}

const DAY = 86_400_000;

/**
 * An account with two members, a key each and an app key; calls made today through the real
 * proxy and the emulator (cache writes and reads, errors, retries, groups, two models), plus
 * call records on earlier days so the charts span several days.
 */
export async function seedDashboard(stack: Stack): Promise<DashboardFixture> {
  const base = stack.gateway.url;
  const acct = await stack.seedAccount({ name: 'Dashboard Co', trialDays: 10 });
  const admin = (path: string, body: object) => api(base, path, { key: acct.adminKey, body });
  const alice = (await admin('/v1/organizations/users', { email: 'alice@dash.test', name: 'Alice' })).body;
  const bob = (await admin('/v1/organizations/users', { email: 'bob@dash.test', name: 'Bob' })).body;
  const mk = async (body: object) => {
    const k = (await admin('/v1/organizations/api_keys', body)).body;
    return { id: k.id as string, secret: k.key as string };
  };
  const aliceKey = await mk({ name: 'alice laptop', member_id: alice.id });
  const bobKey = await mk({ name: 'bob ci', member_id: bob.id });
  const appKey = await mk({ name: 'web app', app: 'web', environment: 'prod' });

  const call = (key: string, headers: Record<string, string>, model = 'claude-sonnet-4-5') =>
    api(base, '/v1/messages', {
      bearer: key,
      headers,
      body: {
        model,
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Summarise the quarterly report in one line.' }],
      },
    });
  const plan: Array<[string, Record<string, string>, string?]> = [
    [aliceKey.secret, { 'keygate-group-id': 'refactor-1', 'x-emulator-scenario': 'cache_write_5m' }],
    [aliceKey.secret, { 'keygate-group-id': 'refactor-1', 'x-emulator-scenario': 'cache_read' }],
    [
      aliceKey.secret,
      { 'keygate-group-id': 'refactor-1', 'x-emulator-scenario': 'cache_write_1h' },
      'claude-opus-4-5',
    ],
    [aliceKey.secret, { 'keygate-group-id': 'refactor-1', 'x-emulator-scenario': 'rate_limit' }],
    [aliceKey.secret, { 'keygate-group-id': 'refactor-1', 'x-stainless-retry-count': '1' }],
    [bobKey.secret, { 'keygate-group-id': 'ci-run-7' }, 'claude-haiku-4-5'],
    [
      bobKey.secret,
      { 'keygate-group-id': 'ci-run-7', 'x-emulator-scenario': 'overloaded' },
      'claude-haiku-4-5',
    ],
    [bobKey.secret, { 'keygate-group-id': 'ci-run-7' }, 'claude-haiku-4-5'],
    [appKey.secret, {}],
    [appKey.secret, { 'x-emulator-scenario': 'thinking' }, 'claude-opus-4-5'],
  ];
  for (const [key, headers, model] of plan) await call(key, headers, model);
  await stack.gateway.writer.flush();

  const now = Date.now();
  const at = (daysAgo: number) =>
    new Date(Math.floor(now / DAY) * DAY - daysAgo * DAY + 10 * 3_600_000).toISOString();
  const earlier = (
    daysAgo: number,
    who: { keyId: string; memberId: string | null },
    usage: Record<string, number>,
    model = 'claude-sonnet-4-5',
  ) => callAt(acct.id, at(daysAgo), { ...who, model, usage, groupId: `batch-${daysAgo}` });
  await stack.gateway.store.calls.insertBatch([
    earlier(
      2,
      { keyId: aliceKey.id, memberId: alice.id },
      { input_tokens: 1200, output_tokens: 300, cache_read_input_tokens: 5000 },
    ),
    earlier(
      3,
      { keyId: bobKey.id, memberId: bob.id },
      { input_tokens: 800, output_tokens: 900 },
      'claude-haiku-4-5',
    ),
    earlier(
      5,
      { keyId: appKey.id, memberId: null },
      { input_tokens: 4000, output_tokens: 1500 },
      'claude-opus-4-5',
    ),
    earlier(12, { keyId: aliceKey.id, memberId: alice.id }, { input_tokens: 9000, output_tokens: 2500 }),
  ]);
  return { acct, alice, bob, aliceKey, bobKey, appKey };
}
