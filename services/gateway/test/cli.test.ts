import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, OPERATOR_TOKEN as TOKEN, type Cli } from './cli-runner';
import { api, callModel, PROVIDER_KEY, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

let stack: Stack;
let keygate: Cli;
const json: Cli['json'] = (args, extra) => keygate.json(args, extra);

beforeAll(async () => {
  stack = await startStack();
  keygate = cliFor(stack);
});
afterAll(() => stack?.close());

describe('help and exit codes scripts can trust', () => {
  it('--help everywhere, exit 0; the codes are documented', async () => {
    const [top, group, command] = await Promise.all([
      keygate(['--help']),
      keygate(['key', '--help']),
      keygate(['key', 'create', '--help']),
    ]);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/Exit codes:[\s\S]*2 {2}usage error[\s\S]*4 {2}not found/);
    expect(top.stdout).toMatch(/member remove/);
    expect(group).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/keygate key <create\|list\|rotate\|update\|revoke>/),
    });
    expect(command).toMatchObject({ code: 0, stdout: expect.stringMatching(/--monthly-cap-usd/) });
  });

  it('2 for usage errors, 4 for what does not exist, with a message that says what to do', async () => {
    const [unknown, flag, missing, badPlan, notFound, badBy] = await Promise.all([
      keygate(['frobnicate']),
      keygate(['key', 'list', '--acount', 'x']),
      keygate(['account', 'create', '--name', 'No plan']),
      keygate(['account', 'create', '--name', 'Gold', '--plan', 'gold']),
      keygate(['key', 'list', '--account', 'acct_doesnotexist']),
      keygate(['usage', '--by', 'key']),
    ]);
    expect(unknown).toMatchObject({ code: 2, stderr: expect.stringMatching(/Unknown command: frobnicate/) });
    expect(flag).toMatchObject({ code: 2, stderr: expect.stringMatching(/--acount/) });
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringMatching(/--plan is required/) });
    expect(badPlan).toMatchObject({ code: 2, stderr: expect.stringMatching(/plan/) });
    expect(notFound).toMatchObject({
      code: 4,
      stderr: expect.stringMatching(/No account with id 'acct_doesnotexist'/),
    });
    expect(badBy).toMatchObject({ code: 2, stderr: expect.stringMatching(/need --account/) });
  }, 180_000);

  it('a mistyped command, option or value is answered with the nearest one', async () => {
    const [group, sub, option, by, far] = await Promise.all([
      keygate(['acount', 'create', '--name', 'Typo']),
      keygate(['key', 'craete', '--account', 'x']),
      keygate(['key', 'list', '--acount', 'x']),
      keygate(['usage', '--account', 'acct_x', '--by', 'membr']),
      keygate(['zzzzzzzz']),
    ]);
    expect(group).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("Did you mean 'keygate account create'?"),
    });
    expect(sub).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("Did you mean 'keygate key create'?"),
    });
    expect(option).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        "unknown option '--acount' for 'keygate key list'. Did you mean '--account'?",
      ),
    });
    expect(by).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("got 'membr'. Did you mean 'member'?"),
    });
    expect(far).toMatchObject({ code: 2, stderr: expect.not.stringContaining('Did you mean') });
  }, 180_000);
});

describe('a script provisions with --json and calls the gateway right after', () => {
  it('account create → admin key; key create → app key; both work at once', async () => {
    const account = await json(
      [
        'account',
        'create',
        '--name',
        'Scripted',
        '--plan',
        'team',
        '--admin-email',
        'ops@scripted.test',
        '--provider-key-env',
        'UPSTREAM_KEY',
      ],
      { UPSTREAM_KEY: PROVIDER_KEY },
    );
    expect(account).toMatchObject({
      id: expect.stringMatching(/^acct_/),
      plan: 'team',
      admin: { key: { key: expect.stringMatching(/^kg_admin_/) } },
    });
    expect(JSON.stringify(account)).not.toContain(PROVIDER_KEY);
    const me = await api(stack.gateway.url, '/v1/organizations/me', { key: account.admin.key.key });
    expect(me.body.id).toBe(account.id);

    const [live, test] = await Promise.all([
      json([
        'key',
        'create',
        '--account',
        account.id,
        '--app',
        'billing',
        '--env',
        'prod',
        '--rpm',
        '100',
        '--monthly-cap-usd',
        '25',
      ]),
      json(['key', 'create', '--account', account.id, '--test']),
    ]);
    expect(live).toMatchObject({
      key: expect.stringMatching(/^kg_live_/),
      app: 'billing',
      created_by: 'cli',
      limits: { requests_per_minute: 100, monthly_spend_cap_cents: 2500 },
    });
    expect((await callModel(stack.gateway.url, live.key)).status).toBe(200);
    expect((await callModel(stack.gateway.url, test.key)).status).toBe(200);

    const audit = (
      await api(stack.gateway.url, `/v1/organizations/audit_log?target_id=${live.id}`, {
        key: account.admin.key.key,
      })
    ).body;
    expect(audit.data[0]).toMatchObject({ action: 'api_key.create', actor: 'cli' });
  }, 180_000);
});

describe('members, keys and usage from the CLI', () => {
  let account: any;
  beforeAll(async () => {
    account = await json(
      [
        'account',
        'create',
        '--name',
        'Managed',
        '--plan',
        'team',
        '--admin-email',
        'boss@managed.test',
        '--provider-key-env',
        'UPSTREAM_KEY',
      ],
      { UPSTREAM_KEY: PROVIDER_KEY },
    );
  }, 180_000);

  it('member add | list | remove', async () => {
    const m = await json([
      'member',
      'add',
      '--account',
      account.id,
      '--email',
      'dev@managed.test',
      '--name',
      'Dev',
    ]);
    expect(m).toMatchObject({ type: 'user', role: 'developer' });
    const table = await keygate(['member', 'list', '--account', account.id]);
    expect(table.stdout).toMatch(/^ID\s+EMAIL\s+NAME\s+ROLE/m);
    expect(table.stdout).toContain('dev@managed.test');
    expect((await json(['member', 'remove', '--account', account.id, '--member', m.id])).type).toBe(
      'user_deleted',
    );
    expect((await json(['member', 'list', '--account', account.id])).map((x: any) => x.email)).toEqual([
      'boss@managed.test',
    ]);
    expect((await keygate(['member', 'remove', '--account', account.id, '--member', m.id])).code).toBe(4);
  }, 180_000);

  it('key list | rotate | revoke: the revoked key is refused by the running gateway within a second', async () => {
    const k = await json(['key', 'create', '--account', account.id, '--name', 'rotate-me']);
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    const listed = await json(['key', 'list', '--account', account.id]);
    expect(listed.map((x: any) => x.id)).toContain(k.id);
    expect(listed.find((x: any) => x.key)).toBeUndefined();

    const rotated = await json(['key', 'rotate', '--account', account.id, '--key', k.id]);
    expect(rotated).toMatchObject({ id: k.id, key: expect.stringMatching(/^kg_live_/) });
    expect((await callModel(stack.gateway.url, rotated.key)).status).toBe(200);
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(401);

    const revoked = await keygate(['key', 'revoke', '--account', account.id, '--key', k.id]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/Revoked key/);
    await waitFor(async () => (await callModel(stack.gateway.url, rotated.key)).status !== 200, {
      timeout: 1_000,
      interval: 10,
      what: 'the revoked key to be refused',
    });
  }, 180_000);

  it('key create --resumable | key update: limits lifted with none, resumable streams on and off', async () => {
    const k = await json([
      'key',
      'create',
      '--account',
      account.id,
      '--name',
      'phone',
      '--rpm',
      '50',
      '--resumable',
    ]);
    expect(k).toMatchObject({ resumable_streams: true, limits: { requests_per_minute: 50 } });
    const stream = () =>
      fetch(`${stack.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'claude-haiku-4-5',
          max_tokens: 8,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      }).then(async (r) => {
        await r.text();
        return r.headers.get('keygate-call-id');
      });
    expect(await stream()).toMatch(/^req_/);

    const updated = await keygate([
      'key',
      'update',
      k.id,
      '--rpm',
      'none',
      '--tpm',
      '9000',
      '--resumable',
      'off',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.stdout).toMatch(/Updated key/);
    expect(updated.stdout).toMatch(/rpm\s+none/);
    expect(updated.stdout).toMatch(/resumable_streams\s+off/);
    const shown = (await json(['key', 'list', '--account', account.id])).find((x: any) => x.id === k.id);
    expect(shown).toMatchObject({
      resumable_streams: false,
      limits: { requests_per_minute: null, tokens_per_minute: 9000 },
    });
    await waitFor(async () => (await stream()) === null, {
      timeout: 2_000,
      what: 'the change to reach the gateway',
    });

    const [nothing, bad, badRpm, missing] = await Promise.all([
      keygate(['key', 'update', k.id]),
      keygate(['key', 'update', k.id, '--resumable', 'yes']),
      keygate(['key', 'update', k.id, '--rpm', 'lots']),
      keygate(['key', 'update', 'key_doesnotexist', '--name', 'x']),
    ]);
    expect(nothing).toMatchObject({ code: 2, stderr: expect.stringMatching(/Nothing to change/) });
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringMatching(/--resumable: expected on or off/) });
    expect(badRpm).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--rpm: expected a whole number/),
    });
    expect(missing.code).toBe(4);
  }, 180_000);

  it('usage --by key|day|model as a table or JSON rows with the provider field names', async () => {
    const k = await json(['key', 'create', '--account', account.id, '--name', 'counted']);
    for (let i = 0; i < 2; i++) expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    await stack.gateway.writer.flush();
    const rows = await json(['usage', '--account', account.id, '--by', 'key']);
    const row = rows.find((r: any) => r.api_key_id === k.id);
    expect(row).toMatchObject({ api_key_name: 'counted', requests: 2, errors: 0 });
    expect(Object.keys(row)).toEqual(
      expect.arrayContaining([
        'uncached_input_tokens',
        'cache_creation',
        'cache_read_input_tokens',
        'output_tokens',
        'requests',
        'errors',
      ]),
    );
    expect(Object.keys(row.cache_creation).sort()).toEqual([
      'ephemeral_1h_input_tokens',
      'ephemeral_5m_input_tokens',
    ]);
    const today = new Date().toISOString().slice(0, 10);
    const [byDay, table, all] = await Promise.all([
      json(['usage', '--account', account.id, '--by', 'day', '--since', today, '--until', today]),
      keygate(['usage', '--account', account.id, '--by', 'model']),
      json(['usage', '--by', 'account']),
    ]);
    expect(byDay).toEqual([expect.objectContaining({ day: today })]);
    expect(table.stdout).toMatch(
      /MODEL\s+REQUESTS\s+LIVE\s+TEST\s+ERRORS\s+ERROR_RATE\s+INPUT\s+CACHE_WRITE_5M\s+CACHE_WRITE_1H\s+CACHE_READ\s+OUTPUT\s+COST_USD/,
    );
    expect(all.map((r: any) => r.account_id)).toContain(account.id);
  }, 180_000);

  it('account list | get | suspend | reactivate | set-provider-key, and plans', async () => {
    const listed = await json(['account', 'list', '--search', 'Managed']);
    expect(listed.map((a: any) => a.id)).toContain(account.id);
    expect((await json(['account', 'suspend', '--account', account.id])).status).toBe('suspended');
    expect((await json(['account', 'get', '--account', account.id])).status).toBe('suspended');
    expect((await json(['account', 'reactivate', '--account', account.id])).status).toBe('active');
    const set = await keygate(
      ['account', 'set-provider-key', '--account', account.id, '--provider-key-env', 'NEW_KEY'],
      { NEW_KEY: PROVIDER_KEY },
    );
    expect(set).toMatchObject({ code: 0, stdout: expect.stringMatching(/sk-ant-…/) });
    expect(set.stdout).not.toContain(PROVIDER_KEY);
    const unset = await keygate([
      'account',
      'set-provider-key',
      '--account',
      account.id,
      '--provider-key-env',
      'NOT_SET_ANYWHERE',
    ]);
    expect(unset).toMatchObject({ code: 2, stderr: expect.stringMatching(/\$NOT_SET_ANYWHERE is not set/) });
    expect((await json(['plans'])).map((p: any) => p.id)).toEqual(['solo', 'team', 'scale']);
  }, 180_000);

  it('KEYGATE_URL sends commands to a running gateway over HTTP', async () => {
    const viaHttp = { KEYGATE_URL: stack.gateway.url, KEYGATE_OPERATOR_TOKEN: TOKEN, DATABASE_URL: '' };
    expect((await json(['account', 'get', '--account', account.id], viaHttp)).id).toBe(account.id);
    const wrong = await keygate(['account', 'get', '--account', account.id], {
      ...viaHttp,
      KEYGATE_OPERATOR_TOKEN: 'wrong-token-0123456789',
    });
    expect(wrong).toMatchObject({ code: 1, stderr: expect.stringMatching(/KEYGATE_OPERATOR_TOKEN/) });
  }, 180_000);
});
