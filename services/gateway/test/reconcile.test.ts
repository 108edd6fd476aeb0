import { DEFAULT_ADMIN_KEY } from '@keygate/emulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateAccount } from '../src/accounts/service';
import { api, callAroundKeygate, PROVIDER_KEY, startStack, type Stack } from './harness';

let stack: Stack;
let admin: string;
const TODAY = new Date().toISOString().slice(0, 10);
const TOMORROW = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
const run = () =>
  api(stack.gateway.url, '/v1/organizations/reconciliation', {
    key: admin,
    body: { starting_at: `${TODAY}T00:00:00Z`, ending_at: `${TOMORROW}T00:00:00Z` },
  });

const call = async (model: string) => {
  const res = await api(stack.gateway.url, '/v1/messages', {
    bearer: stack.appKey,
    body: { model, max_tokens: 64, messages: [{ role: 'user', content: 'Reconcile me.' }] },
  });
  expect(res.status).toBe(200);
};

beforeAll(async () => {
  stack = await startStack();
  admin = (await stack.newKey({ kind: 'admin' })).secret;
});
afterAll(() => stack?.close());

describe('reconciliation with the provider', () => {
  it('needs the Admin API key first, and refuses one that is not an admin key', async () => {
    const none = await run();
    expect(none.status).toBe(400);
    expect(none.body.error.message).toMatch(/provider_admin_key/);
    const wrong = await api(stack.gateway.url, '/v1/organizations/provider_admin_key', {
      key: admin,
      method: 'PUT',
      body: { admin_key: PROVIDER_KEY },
    });
    expect(wrong.status).toBe(400);
    const set = await api(stack.gateway.url, '/v1/organizations/provider_admin_key', {
      key: admin,
      method: 'PUT',
      body: { admin_key: DEFAULT_ADMIN_KEY },
    });
    expect(set.status).toBe(200);
    expect(set.body.provider_admin_key_hint).not.toContain(DEFAULT_ADMIN_KEY);
    const [row] = await stack.gateway.store.db
      .sql`select provider_admin_key_sealed from accounts where id = ${stack.account.id}`;
    expect(row!.provider_admin_key_sealed).not.toContain(DEFAULT_ADMIN_KEY);
  });

  it('shows zero drift on a clean workload', async () => {
    for (const model of ['claude-opus-5-5', 'claude-sonnet-4-6', 'claude-haiku-4-5']) await call(model);
    await stack.calls();
    const res = await run();
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.drift_percent).toBe(0);
    expect(res.body.lines).toHaveLength(3);
    for (const line of res.body.lines) {
      expect(line.token_drift, line.model).toBe(0);
      expect(Math.abs(line.cents_drift), line.model).toBeLessThan(1e-6);
      expect(line.likely_cause).toBeNull();
      expect(line.provider.cents).toBeGreaterThan(0);
    }
    // Per provider API key: one line, Keygate's own key, every token on both sides.
    const tokens = res.body.lines.reduce(
      (s: number, l: { keygate: { tokens: number } }) => s + l.keygate.tokens,
      0,
    );
    expect(res.body.by_api_key).toEqual([
      expect.objectContaining({
        keygate_key: true,
        provider: { tokens },
        keygate: { tokens, cents: expect.closeTo(res.body.keygate_cents, 6), unpriced: false },
        token_drift: 0,
        likely_cause: null,
      }),
    ]);
    const alerts = await stack.gateway.store.db
      .sql`select * from alert_events where account_id = ${stack.account.id} and type = 'reconciliation.drift'`;
    expect(alerts).toHaveLength(0);
  });

  it("reads every page of the provider's reports: ten days, today on the second page of seven", async () => {
    const from = new Date(Date.parse(`${TODAY}T00:00:00Z`) - 9 * 86_400_000).toISOString();
    const res = await api(stack.gateway.url, '/v1/organizations/reconciliation', {
      key: admin,
      body: { starting_at: from, ending_at: `${TOMORROW}T00:00:00Z` },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.drift_percent).toBe(0);
    expect(res.body.lines.map((l: { day: string }) => l.day)).toEqual([TODAY, TODAY, TODAY]);
    expect(res.body.lines.every((l: { token_drift: number }) => l.token_drift === 0)).toBe(true);
  });

  it('detects and explains calls made around Keygate and a lost call record', async () => {
    // Straight at the provider with the account's provider key, past Keygate.
    await callAroundKeygate(stack, 'claude-opus-5-5');
    // A call whose record is lost: its row and its share of the rollups are gone.
    const sql = stack.gateway.store.db.sql;
    await sql`delete from calls where account_id = ${stack.account.id} and model = 'claude-sonnet-4-6'`;
    await sql`delete from usage_hourly where account_id = ${stack.account.id} and model = 'claude-sonnet-4-6'`;

    const res = await run();
    expect(res.status).toBe(201);
    expect(res.body.drift_percent).toBeGreaterThan(0.5);
    const byModel = Object.fromEntries(res.body.lines.map((l: { model: string }) => [l.model, l]));
    expect(byModel['claude-opus-5-5'].token_drift).toBeLessThan(0);
    expect(byModel['claude-opus-5-5'].likely_cause).toMatch(/outside Keygate/);
    expect(byModel['claude-sonnet-4-6'].keygate.tokens).toBe(0);
    expect(byModel['claude-sonnet-4-6'].likely_cause).toMatch(/records lost/);
    expect(byModel['claude-haiku-4-5'].likely_cause).toBeNull();
    const [key] = res.body.by_api_key;
    expect(key.keygate_key).toBe(true);
    expect(key.token_drift).toBe(
      byModel['claude-opus-5-5'].token_drift + byModel['claude-sonnet-4-6'].token_drift,
    );
    expect(key.likely_cause).toMatch(/outside Keygate, or call records lost/);
    const alerts =
      await sql`select data from alert_events where account_id = ${stack.account.id} and type = 'reconciliation.drift'`;
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.data.reconciliation_id).toBe(res.body.id);

    const latest = await api(stack.gateway.url, '/v1/organizations/reconciliation', { key: admin });
    expect(latest.status).toBe(200);
    expect(latest.body.id).toBe(res.body.id);
  });

  it("after the account changes its provider key, Keygate's earlier hours stay on the key they went out with", async () => {
    const before = await run();
    const [ours] = before.body.by_api_key;
    expect(ours.keygate_key).toBe(true);
    await updateAccount(
      stack.deps as never,
      stack.account.id,
      { providerKey: 'sk-ant-test-not-a-real-second-key-0000' },
      'test',
    );
    const after = await run();
    expect(after.status).toBe(201);
    // Still one line: the earlier key, with every Keygate token of today on it; no line for a key the provider does not list.
    expect(after.body.by_api_key).toHaveLength(1);
    expect(after.body.by_api_key[0]).toMatchObject({
      api_key_id: ours.api_key_id,
      keygate_key: true,
      keygate: { tokens: ours.keygate.tokens },
      provider: { tokens: ours.provider.tokens },
    });
    expect(after.body.by_api_key[0].api_key_label).toContain("Keygate's earlier provider key");
    const rows = await stack.gateway.store.db
      .sql`select key_head, key_tail from provider_key_history where account_id = ${stack.account.id} order by since, id`;
    expect(rows.map((r) => r.key_tail)).toEqual([PROVIDER_KEY.slice(-4), '0000']);
    expect(rows.every((r) => r.key_head.length === 16)).toBe(true);
  });
});
