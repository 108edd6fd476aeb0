import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRow } from '../src/call-log/usage-queries';
import { cliFor, type Cli } from './cli-runner';
import { callModel, PROVIDER_KEY, startStack, type Stack } from './harness';
import { handCents } from './kit/published-rates';

let stack: Stack;
let keygate: Cli;
let account: { id: string };

beforeAll(async () => {
  stack = await startStack();
  keygate = cliFor(stack);
  account = await keygate.json(
    ['account', 'create', '--name', 'Acme', '--plan', 'team', '--provider-key-env', 'UPSTREAM_KEY'],
    { UPSTREAM_KEY: PROVIDER_KEY },
  );
}, 180_000);
afterAll(() => stack?.close());

describe('members by id or email', () => {
  it('key create | key list | member remove take --member EMAIL', async () => {
    const alice = await keygate.json([
      'member',
      'add',
      '--account',
      account.id,
      '--email',
      'alice@acme.test',
    ]);
    const key = await keygate.json([
      'key',
      'create',
      '--account',
      account.id,
      '--member',
      'Alice@Acme.test',
      '--name',
      'alice-laptop',
    ]);
    expect(key).toMatchObject({ member_id: alice.id, key: expect.stringMatching(/^kg_live_/) });
    const listed = await keygate.json([
      'key',
      'list',
      '--account',
      account.id,
      '--member',
      'alice@acme.test',
    ]);
    expect(listed.map((k: any) => k.id)).toEqual([key.id]);

    const nobody = await keygate(['key', 'create', '--account', account.id, '--member', 'bob@acme.test']);
    expect(nobody).toMatchObject({
      code: 4,
      stdout: '',
      stderr: expect.stringMatching(/--member: no active member with email 'bob@acme.test'/),
    });

    expect(
      (await keygate.json(['member', 'remove', '--account', account.id, '--member', 'alice@acme.test'])).id,
    ).toBe(alice.id);
    expect(
      (await keygate(['member', 'remove', '--account', account.id, '--member', 'alice@acme.test'])).code,
    ).toBe(4);
  }, 180_000);
});

describe('keys by id alone', () => {
  it('key rotate and key revoke KEY_ID without --account; revoking twice says so and exits 3', async () => {
    const key = await keygate.json(['key', 'create', '--account', account.id, '--name', 'by-id']);
    const rotated = await keygate.json(['key', 'rotate', key.id]);
    expect(rotated).toMatchObject({ id: key.id, key: expect.stringMatching(/^kg_live_/) });

    const revoked = await keygate(['key', 'revoke', key.id]);
    expect(revoked).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Revoked key /) });
    expect((await callModel(stack.gateway.url, rotated.key)).status).toBe(401);

    const again = await keygate(['key', 'revoke', key.id]);
    expect(again).toMatchObject({
      code: 3,
      stdout: expect.stringMatching(/was already revoked; nothing changed/),
    });
    const againJson = await keygate(['key', 'revoke', '--key', key.id, '--json']);
    expect(againJson.code).toBe(3);
    expect(JSON.parse(againJson.stdout)).toMatchObject({ id: key.id, status: 'archived' });
    expect((await keygate(['key', '--help'])).stdout).toBeTruthy();
    expect((await keygate(['--help'])).stdout).toMatch(/3 {2}nothing changed/);

    const [unknown, elsewhere, twice] = await Promise.all([
      keygate(['key', 'revoke', 'key_doesnotexist']),
      keygate(['key', 'revoke', key.id, '--account', stack.account.id]),
      keygate(['key', 'revoke', key.id, '--key', key.id]),
    ]);
    expect(unknown).toMatchObject({
      code: 4,
      stderr: expect.stringMatching(/No API key with id 'key_doesnotexist'/),
    });
    expect(elsewhere).toMatchObject({ code: 4, stderr: expect.stringMatching(/not|No API key/) });
    expect(twice.code).toBe(2);
  }, 180_000);
});

describe('--since and --until as people write them', () => {
  it('today, 7d, yesterday, a date; a bad value names the CLI flag, not the API field', async () => {
    const today = new Date().toISOString().slice(0, 10);
    for (const since of ['today', '7d', '12h', today, '2026-01-01T00:00:00Z']) {
      const run = await keygate([
        'usage',
        '--account',
        account.id,
        '--by',
        'day',
        '--since',
        since,
        '--json',
      ]);
      expect(run.code, `${since}: ${run.stderr}`).toBe(0);
      expect(Array.isArray(JSON.parse(run.stdout))).toBe(true);
    }
    const [bad, badUntil, backwards, badDate] = await Promise.all([
      keygate(['usage', '--account', account.id, '--since', 'last week']),
      keygate(['usage', '--account', account.id, '--until', 'soon']),
      keygate(['usage', '--account', account.id, '--since', 'today', '--until', 'yesterday']),
      keygate(['usage', '--account', account.id, '--since', '2026-02-30']),
    ]);
    for (const run of [bad, badUntil, backwards, badDate]) {
      expect(run.code).toBe(2);
      expect(run.stderr).not.toMatch(/starting_at|ending_at/);
    }
    expect(bad.stderr).toMatch(/--since: expected today, yesterday, Nd .*got 'last week'/);
    expect(badUntil.stderr).toMatch(/--until: expected/);
    expect(backwards.stderr).toMatch(/--until must be after --since/);
    expect(badDate.stderr).toMatch(/--since: .*got '2026-02-30'/);
  }, 180_000);
});

describe('usage --by member,day with cost and live/test columns', () => {
  it('two dimensions; live and test calls apart; cost of live calls at list prices', async () => {
    const acct = await keygate.json(
      ['account', 'create', '--name', 'Usage', '--plan', 'team', '--provider-key-env', 'UPSTREAM_KEY'],
      { UPSTREAM_KEY: PROVIDER_KEY },
    );
    const carol = await keygate.json(['member', 'add', '--account', acct.id, '--email', 'carol@usage.test']);
    const live = await keygate.json(['key', 'create', '--account', acct.id, '--member', 'carol@usage.test']);
    const test = await keygate.json([
      'key',
      'create',
      '--account',
      acct.id,
      '--member',
      'carol@usage.test',
      '--test',
    ]);
    const shared = await keygate.json(['key', 'create', '--account', acct.id, '--app', 'no-member']);
    for (const k of [live.key, live.key, test.key, shared.key])
      expect((await callModel(stack.gateway.url, k)).status).toBe(200);
    await stack.gateway.writer.flush();
    const calls = await stack.gateway.store.db.sql<
      (UsageRow & { key_id: string })[]
    >`select * from calls where account_id = ${acct.id}`;
    const cost = (keyId: string) =>
      calls.filter((c) => c.key_id === keyId).reduce((s, c) => s + handCents(c.model, c) / 100, 0);
    expect(cost(live.id)).toBeGreaterThan(0);

    const rows = await keygate.json([
      'usage',
      '--account',
      acct.id,
      '--by',
      'member,day',
      '--since',
      'today',
    ]);
    const today = new Date().toISOString().slice(0, 10);
    expect(rows).toHaveLength(2);
    const carolRow = rows.find((r: any) => r.user_id === carol.id);
    expect(carolRow).toMatchObject({
      user_email: 'carol@usage.test',
      day: today,
      requests: 3,
      live_requests: 2,
      test_requests: 1,
      errors: 0,
    });
    expect(carolRow.cost_usd).toBeCloseTo(cost(live.id), 6);
    const none = rows.find((r: any) => r.user_id === null);
    expect(none).toMatchObject({
      user_email: null,
      day: today,
      requests: 1,
      live_requests: 1,
      test_requests: 0,
    });
    expect(none.cost_usd).toBeCloseTo(cost(shared.id), 6);

    const text = await keygate(['usage', '--account', acct.id, '--by', 'member,day', '--since', 'today']);
    expect(text.stdout).toMatch(
      /USER_ID\s+USER_EMAIL\s+DAY\s+REQUESTS\s+LIVE\s+TEST\s+ERRORS\s+ERROR_RATE\s+INPUT.*COST_USD/,
    );
    expect(text.stdout).toMatch(/Estimated cost \(live keys\): \d+\.\d{4} USD/);

    const everyAccount = await keygate.json(['usage', '--by', 'account,model', '--since', 'today']);
    expect(everyAccount.find((r: any) => r.account_id === acct.id)).toMatchObject({
      account_name: 'Usage',
      model: 'claude-opus-4-5',
      requests: 4,
      test_requests: 1,
    });
    const [three, dup] = await Promise.all([
      keygate(['usage', '--account', acct.id, '--by', 'member,day,model']),
      keygate(['usage', '--account', acct.id, '--by', 'day,day']),
    ]);
    expect(three).toMatchObject({ code: 2, stderr: expect.stringMatching(/--by: expected one or two of/) });
    expect(dup.code).toBe(2);
  }, 180_000);
});

describe('--json prints exactly one JSON value on stdout', () => {
  it('for lists, single records and reports; nothing on stdout when the command fails', async () => {
    for (const args of [
      ['plans'],
      ['account', 'list'],
      ['account', 'get', '--account', account.id],
      ['usage', '--by', 'day'],
    ]) {
      const run = await keygate([...args, '--json']);
      expect(run.code, run.stderr).toBe(0);
      expect(() => JSON.parse(run.stdout), args.join(' ')).not.toThrow();
    }
    const failed = await keygate(['account', 'get', '--account', 'acct_nope', '--json']);
    expect(failed).toMatchObject({ code: 4, stdout: '' });
  }, 180_000);
});
