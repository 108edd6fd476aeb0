import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callAt, startStack, type SeededAccount, type Stack } from './harness';

/**
 * Issue 30 item 4: `keygate limit` and `keygate policy`, the compiled CLI against a running
 * gateway's operator API, and the gateway then holding calls to what the CLI set.
 */
const BIN = join(import.meta.dirname, '../bin/keygate.js');
let stack: Stack;
let acct: SeededAccount;

function keygate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { DATABASE_URL: _d, KEYGATE_SECRET: _s, ...rest } = process.env;
  const env = {
    ...rest,
    KEYGATE_URL: stack.gateway.url,
    KEYGATE_OPERATOR_TOKEN: stack.config.operatorToken!,
    KEYGATE_LOG_LEVEL: 'warn',
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function json(args: string[]) {
  const out = await keygate([...args, '--json']);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout);
}

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });

async function memberWithKey(): Promise<{ memberId: string; email: string; keyId: string; key: string }> {
  const email = `dev-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const m = (await admin('/users', { email })).body;
  const k = (await admin('/api_keys', { member_id: m.id })).body;
  return { memberId: m.id, email, keyId: k.id, key: k.key };
}

const call = (key: string, model = 'claude-sonnet-4-5') =>
  api(stack.gateway.url, '/v1/messages', {
    key,
    body: { model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  });

beforeAll(async () => {
  stack = await startStack();
  acct = await stack.seedAccount({ plan: 'team' });
});
afterAll(() => stack?.close());

describe('keygate limit', () => {
  it("sets a member's spend limit by email, lists it with spend and reset, and the gateway refuses at it", async () => {
    const m = await memberWithKey();
    // $4 of Sonnet 4.5 output ($15 per million tokens) already spent this month.
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, new Date().toISOString(), {
        keyId: m.keyId,
        memberId: m.memberId,
        model: 'claude-sonnet-4-5',
        usage: { input_tokens: 0, output_tokens: 266_667 },
      }),
    ]);
    const set = await keygate(['limit', 'set', '--account', acct.id, '--member', m.email, '--spend', '5']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      new RegExp(`Spend limit of member ${m.memberId}: \\$5\\.00 monthly, hold expected`),
    );

    const rows = await json(['limit', 'list', '--account', acct.id, '--member', m.memberId]);
    const spend = rows.find((r: any) => r.rule === 'spend_limit');
    expect(spend).toMatchObject({
      set_on: `member ${m.memberId}`,
      period: 'monthly',
      limit: '$5.00',
      spent: '$4.00',
    });
    expect(spend.left).toBe('$1.00');
    expect(spend.resets).toMatch(/^\d{4}-\d{2}-01 00:00:00Z$/);
    // The plan's default rate limits of the member's key show too.
    expect(rows.some((r: any) => r.rule === 'rate_limit' && r.id === m.keyId)).toBe(true);

    const text = await keygate(['limit', 'list', '--account', acct.id, '--member', m.memberId]);
    expect(text.stdout).toMatch(/RULE\s+SET_ON\s+PERIOD\s+LIMIT\s+SPENT\s+LEFT\s+RESETS/);

    // Lowered to $3 with the strict hold: below what is spent, so the gateway refuses.
    const strict = await json([
      'limit',
      'set',
      '--account',
      acct.id,
      '--member',
      m.memberId,
      '--spend',
      '3',
      '--strict',
    ]);
    expect(strict).toMatchObject({
      amount: '300',
      hold: 'ceiling',
      scope: { type: 'user', user_id: m.memberId },
    });
    const refused = await call(m.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.type).toBe('billing_error');
    expect(refused.body.error.message).toMatch(/spend limit of \$3\.00/);

    const removed = await keygate([
      'limit',
      'remove',
      '--account',
      acct.id,
      '--member',
      m.memberId,
      '--spend',
    ]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/Removed the monthly spend limit of member/);
    expect((await call(m.key)).status).toBe(200);
    const again = await keygate(['limit', 'remove', '--account', acct.id, '--member', m.memberId, '--spend']);
    expect(again.code).toBe(4);
    expect(again.stderr).toMatch(/has no monthly spend limit of its own/);
  });

  it("sets a key's rpm, itpm and otpm; the gateway then holds the key to its rpm; remove lifts it", async () => {
    const m = await memberWithKey();
    const set = await json([
      'limit',
      'set',
      '--key',
      m.keyId,
      '--rpm',
      '1',
      '--itpm',
      '50000',
      '--otpm',
      '8000',
    ]);
    expect(set.limits).toMatchObject({
      requests_per_minute: 1,
      input_tokens_per_minute: 50_000,
      output_tokens_per_minute: 8000,
    });
    expect((await call(m.key)).status).toBe(200);
    const second = await call(m.key);
    expect(second.status).toBe(429);
    expect(second.body.error.type).toBe('rate_limit_error');

    const rows = await json(['limit', 'list', '--key', m.keyId]);
    expect(rows.filter((r: any) => r.rule === 'rate_limit').map((r: any) => r.limit)).toEqual(
      expect.arrayContaining(['1 rpm', '50000 itpm', '8000 otpm']),
    );

    const lifted = await keygate(['limit', 'remove', '--key', m.keyId, '--rpm']);
    expect(lifted.code, lifted.stderr).toBe(0);
    expect(lifted.stdout).toMatch(/rpm none, itpm 50000, otpm 8000/);
    expect((await call(m.key)).status).toBe(200);
  });

  it("a member's, a group's and the account's rate limits: set, list (the plan's default too), the gateway holds them, remove", async () => {
    const m = await memberWithKey();
    const before = await json(['limit', 'list', '--account', acct.id, '--member', m.email]);
    expect(
      before
        .filter((r: any) => r.rule === 'rate_limit' && !r.set_on.startsWith('key'))
        .map((r: any) => [r.set_on, r.limit]),
    ).toEqual([
      ["plan's member default", '2000 rpm'],
      ["plan's member default", '2000000 itpm'],
      ["plan's member default", '400000 otpm'],
    ]);
    const set = await keygate(['limit', 'set', '--account', acct.id, '--member', m.email, '--rpm', '1']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      new RegExp(`^Rate limits of member ${m.memberId}: rpm 1, itpm none, otpm none \\(rl_`),
    );
    expect((await call(m.key)).status).toBe(200);
    const refused = await call(m.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/^This member's rate limit of 1 requests per minute/);
    const rows = await json(['limit', 'list', '--account', acct.id, '--member', m.memberId]);
    expect(rows.filter((r: any) => r.set_on === `member ${m.memberId}`).map((r: any) => r.limit)).toEqual([
      '1 rpm',
    ]);

    const g = (await admin('/rbac_groups', { name: `rates-${Date.now()}` })).body;
    const group = await json([
      'limit',
      'set',
      '--account',
      acct.id,
      '--group',
      g.id,
      '--itpm',
      '90000',
      '--otpm',
      '9000',
    ]);
    expect(group.limits).toEqual([
      { type: 'input_tokens_per_minute', value: 90_000 },
      { type: 'output_tokens_per_minute', value: 9000 },
    ]);
    const account = await json(['limit', 'set', '--account', acct.id, '--rpm', '100000']);
    expect(account.scope).toEqual({ type: 'organization' });
    const groupRows = await json(['limit', 'list', '--account', acct.id, '--group', g.id]);
    expect(groupRows.map((r: any) => [r.set_on, r.limit])).toEqual([
      ['account', '100000 rpm'],
      [`group ${g.id}`, '90000 itpm'],
      [`group ${g.id}`, '9000 otpm'],
    ]);

    const lifted = await keygate(['limit', 'remove', '--account', acct.id, '--member', m.memberId, '--rpm']);
    expect(lifted.code, lifted.stderr).toBe(0);
    expect(lifted.stdout).toMatch(/has no rate limits of its own now/);
    expect((await call(m.key)).status).toBe(200);
    await json(['limit', 'remove', '--account', acct.id, '--group', g.id, '--itpm', '--otpm']);
    await json(['limit', 'remove', '--account', acct.id, '--rpm']);
    expect(await json(['limit', 'list', '--account', acct.id, '--group', g.id])).toEqual([]);
  });

  it('a group and the account: set, list what is inherited, remove', async () => {
    const g = (await admin('/rbac_groups', { name: `g-${Date.now()}` })).body;
    await json(['limit', 'set', '--account', acct.id, '--spend', '100', '--period', 'weekly']);
    await json(['limit', 'set', '--account', acct.id, '--group', g.id, '--spend', '40.50']);
    const rows = await json(['limit', 'list', '--account', acct.id, '--group', g.id]);
    expect(rows.map((r: any) => [r.set_on, r.period, r.limit])).toEqual(
      expect.arrayContaining([
        ['account', 'weekly', '$100.00'],
        [`group ${g.id}`, 'monthly', '$40.50'],
      ]),
    );
    const all = await keygate(['limit', 'list', '--account', acct.id]);
    expect(all.stdout).toMatch(/spend_limit\s+account\s+weekly\s+\$100\.00/);
    await json(['limit', 'remove', '--account', acct.id, '--spend', '--period', 'weekly']);
    await json(['limit', 'remove', '--account', acct.id, '--group', g.id, '--spend']);
    expect(await json(['limit', 'list', '--account', acct.id, '--group', g.id])).toEqual([]);
  });

  it('bad input: clear messages and exit codes', async () => {
    const m = await memberWithKey();
    const cases: [string[], number, RegExp][] = [
      [['limit', 'set', '--account', acct.id, '--member', m.memberId], 2, /Give --spend or one of --rpm/],
      [
        ['limit', 'set', '--account', acct.id, '--spend', 'ten'],
        2,
        /--spend: expected an amount in US dollars/,
      ],
      [
        ['limit', 'set', '--account', acct.id, '--spend', '5', '--period', 'yearly'],
        2,
        /--period: expected one of/,
      ],
      [
        ['limit', 'set', '--account', acct.id, '--member', m.memberId, '--rpm', '5', '--spend', '5'],
        2,
        /not both/,
      ],
      [['limit', 'set', '--account', acct.id, '--group', 'grp_nope', '--rpm', '5'], 4, /grp_nope/],
      [['limit', 'set', '--key', m.keyId, '--spend', '5'], 2, /monthly-cap-usd/],
      [['limit', 'set', '--key', m.keyId, '--rpm', '0'], 2, /--rpm: expected a whole number of at least 1/],
      [
        ['limit', 'list', '--account', acct.id, '--member', m.memberId, '--key', m.keyId],
        2,
        /at most one of/,
      ],
      [['limit', 'list', '--account', acct.id, '--member', 'nobody@example.com'], 4, /no active member/],
      [['limit', 'list', '--key', 'key_nope'], 4, /key_nope/],
      [['limit', 'list', '--account', acct.id, '--group', 'grp_nope'], 4, /grp_nope/],
      [['limit', 'list'], 2, /--account is required/],
      [['limit', 'lst'], 2, /limit list/],
    ];
    for (const [args, code, message] of cases) {
      const out = await keygate(args);
      expect(out.code, `${args.join(' ')}: ${out.stderr}`).toBe(code);
      expect(out.stderr, args.join(' ')).toMatch(message);
    }
    // Thirteen CLI processes one after the other, each starting Node and loading the CLI: about
    // 2.5 s of CPU apiece, 14 s on a quiet machine and over 30 s on a busy one.
  }, 120_000);
});

describe('keygate policy', () => {
  it("sets a key's allowed models, the gateway refuses another model, show lists the account's too", async () => {
    const m = await memberWithKey();
    await json(['policy', 'set', '--account', acct.id, '--models', 'claude-*']);
    const set = await keygate([
      'policy',
      'set',
      '--key',
      m.keyId,
      '--models',
      'claude-haiku-*',
      '--max-tokens',
      '1000',
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/models claude-haiku-\*, max_tokens 1000/);
    expect((await call(m.key, 'claude-haiku-4-5')).status).toBe(200);
    const refused = await call(m.key, 'claude-sonnet-4-5');
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(
      /'claude-sonnet-4-5' is not allowed by the model policy of key/,
    );

    const shown = await json(['policy', 'show', '--key', m.keyId]);
    expect(shown.map((p: any) => p.scope.type).sort()).toEqual(['api_key', 'organization']);
    const text = await keygate(['policy', 'show', '--account', acct.id, '--member', m.memberId]);
    expect(text.stdout).toMatch(/account\s+claude-\*\s+any/);

    const removed = await keygate(['policy', 'remove', '--key', m.keyId]);
    expect(removed.code, removed.stderr).toBe(0);
    expect((await call(m.key, 'claude-sonnet-4-5')).status).toBe(200);
    const gone = await keygate(['policy', 'remove', '--key', m.keyId]);
    expect(gone.code).toBe(4);
    expect(gone.stderr).toMatch(/no model policy/);
    await json(['policy', 'remove', '--account', acct.id]);
  });

  it("a group's policy shows on its members", async () => {
    const m = await memberWithKey();
    const g = (await admin('/rbac_groups', { name: `p-${Date.now()}` })).body;
    await admin(`/rbac_groups/${g.id}/members`, { user_id: m.memberId });
    await json([
      'policy',
      'set',
      '--account',
      acct.id,
      '--group',
      g.id,
      '--models',
      'claude-sonnet-4-5,claude-haiku-*',
    ]);
    const shown = await json(['policy', 'show', '--account', acct.id, '--member', m.email]);
    expect(shown).toEqual([
      expect.objectContaining({
        scope: { type: 'rbac_group', rbac_group_id: g.id },
        allowed_models: ['claude-sonnet-4-5', 'claude-haiku-*'],
      }),
    ]);
    const bad = await keygate(['policy', 'set', '--account', acct.id, '--group', g.id, '--models', 'gpt 4']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/allowed_models/);
    const none = await keygate(['policy', 'set', '--account', acct.id, '--group', g.id]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--models is required/);
  });
});
