import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { dashboardSession } from '../dashboard-http';
import { seedDashboard, type DashboardFixture } from '../dashboard-seed';
import { api, type Stack } from '../harness';
import { logsExport, metricsExport, str } from '../otlp-export';
import { issueSeatInvoice } from './invoice';
import { tableNames } from './table-hashes';

const ORG = '/v1/organizations';
const hash = (s: string) => createHash('sha256').update(s).digest();

export interface EveryTableFixture extends DashboardFixture {
  /** A test key (served by the built-in emulator) made before the backup. */
  testKey: { id: string; secret: string };
}

/**
 * Data in every table of the schema, made through the real app where a request of this seeder
 * makes the row (the account, operator, SCIM and OTLP APIs, dashboard sign-in, calls through the
 * proxy, the store's own writers), and by direct inserts, as their writers write them, for rows
 * that need a party no test here plays (an OIDC provider, the provider's Files and Batches APIs,
 * its usage reports, the billing clock). `assertEveryTableHasRows`
 * fails on any table left empty, so a new table makes this seeder grow.
 */
export async function seedEveryTable(stack: Stack): Promise<EveryTableFixture> {
  const base = stack.gateway.url;
  const store = stack.gateway.store;
  const sql = store.db.sql;
  const dash = await seedDashboard(stack);
  const acct = dash.acct;
  const as = async (path: string, body: object) => {
    const res = await api(base, `${ORG}${path}`, { key: acct.adminKey, body });
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res.body;
  };
  const testKey = await as('/api_keys', { name: 'test key', kind: 'test', app: 'ci' });
  const called = await api(base, '/v1/messages', {
    bearer: testKey.key,
    body: { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  });
  expect(called.status).toBe(200);
  const budget = await as('/budgets', { scope: 'account', limit_cents: 100 });
  const hook = await as('/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['billing.notice'] });
  await as('/invites', { email: 'invitee@dash.test', role: 'user' });
  const group = await as('/rbac_groups', { name: 'platform' });
  await as(`/rbac_groups/${group.id}/members`, { user_id: dash.alice.id });
  await as('/service_accounts', { name: 'ci-bot' });
  await as('/spend_limits', { scope: { type: 'organization' }, amount: '100000', period: 'monthly' });
  await as('/rate_limits', {
    scope: { type: 'user', user_id: dash.alice.id },
    limits: [{ type: 'requests_per_minute', value: 100_000 }],
  });
  await as('/model_policies', {
    scope: { type: 'organization' },
    allowed_models: ['claude-*'],
    max_tokens: 4096,
  });
  await as('/otlp_relay', { url: 'http://127.0.0.1:9/otlp' });
  const price = await api(base, '/operator/v1/prices', {
    bearer: stack.config.operatorToken!,
    body: {
      prices: [
        {
          model: 'claude-seed-1',
          source: 'seed',
          ...{ input: 1, output: 5, cache_write_5m: 1.25, cache_write_1h: 2, cache_read: 0.1 },
        },
      ],
    },
  });
  expect(price.status, JSON.stringify(price.body)).toBeLessThan(300);
  await store.spendLimits.request({
    accountId: acct.id,
    memberId: dash.alice.id,
    period: 'monthly',
    requestedCents: 200_000,
    reason: 'launch week',
  });
  const now = new Date();
  await issueSeatInvoice(store, acct.id);
  await store.subscriptions.change(
    acct.id,
    now,
    { kind: 'webhook', actor: 'stripe', ref: 'evt_seed' },
    () => ({ state: 'active' }),
    {
      id: 'evt_seed',
      type: 'invoice.paid',
    },
  );
  const scimToken = (await as('/scim_tokens', {})).token as string;
  const scimGroup = await fetch(`${base}/scim/v2/Groups`, {
    method: 'POST',
    headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
    body: JSON.stringify({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'engineering',
      members: [{ value: dash.alice.id }],
    }),
  });
  expect(scimGroup.status).toBe(201);
  await dashboardSession(base, acct.adminKey);
  const session = randomUUID();
  // Claude Code's telemetry, sent with a member's key as Claude Code sends it.
  const otlp = (path: string, body: unknown) =>
    fetch(`${base}/otlp/v1/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dash.aliceKey.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const model = str('model', 'claude-opus-4-5');
  expect(
    (await otlp('metrics', metricsExport(session, [['claude_code.cost.usage', 0.25, [model]]]))).status,
  ).toBe(200);
  expect(
    (await otlp('logs', logsExport(session, [['api_request', [model, str('cost_usd', '0.01')]]]))).status,
  ).toBe(200);
  // A revocation reaches the other instances through the invalidations table.
  expect(
    (
      await api(base, `${ORG}/api_keys/${dash.bobKey.id}`, {
        key: acct.adminKey,
        body: { status: 'inactive' },
      })
    ).status,
  ).toBe(200);

  // Rows of parties no test here plays (see above).
  const at = new Date('2025-03-10T12:00:00Z');
  const member = dash.alice.id;
  const key = dash.aliceKey.id;
  await sql`insert into alert_events (id, account_id, type, data) values ('evt_seed_notice', ${acct.id}, 'billing.notice', ${sql.json({ seeded: true })})`;
  await sql`insert into budget_crossings (budget_id, period_start, threshold) values (${budget.id}, ${at}, 80)`;
  await sql`insert into billing_notices (id, account_id, kind, due_at, message) values ('ntc_seed', ${acct.id}, 'trial_ending', ${at}, 'Your trial ends soon.')`;
  await sql`insert into identity_providers (account_id, name, issuer, client_id, client_secret_sealed, provision)
    values (${acct.id}, 'Okta', 'https://idp.example.test', 'client-seed', 'v2.sealed', 'domain')`;
  await sql`insert into idp_sessions (id, account_id, member_id, key_id, refresh_hash, subject)
    values ('idps_seed', ${acct.id}, ${member}, ${key}, ${hash('refresh')}, 'subject-seed')`;
  await sql`insert into idp_refresh_spent (hash, session_id) values (${hash('refresh-spent')}, 'idps_seed')`;
  // Workload federation (its exchange needs a signing issuer: workload-tokens.test.ts plays one)
  // and Claude Code's pushed environment (claude-gateway-protocol.test.ts sets it through the API).
  await sql`insert into federation_issuers (id, account_id, name, issuer_url, jwks)
    values ('fdis_seed', ${acct.id}, 'ci', 'https://issuer.example.test', ${sql.json({ keys: [] })})`;
  await sql`insert into federation_rules (id, account_id, issuer_id, service_account_id, name, match)
    select 'fdrl_seed', ${acct.id}, 'fdis_seed', id, 'deploy', ${sql.json({ subject: 'repo:acme/app:ref:refs/heads/main' })}
    from service_accounts where account_id = ${acct.id} limit 1`;
  await sql`insert into federation_jti (issuer_id, jti, expires_at) values ('fdis_seed', 'jti-seed', ${new Date(Date.now() + 86_400_000)})`;
  await sql`insert into claude_code_env (account_id, env) values (${acct.id}, ${sql.json({ TEAM: 'platform' })})`;
  await sql`insert into account_upstreams (id, account_id, position, kind, base_url, auth, credential_sealed, credential_hint)
    values ('ups_seed', ${acct.id}, 1, 'foundry', 'https://seed.services.ai.azure.com/anthropic', 'x-api-key',
      ${stack.deps.box.seal('foundry-seed-key', { purpose: 'upstream-credential', row: 'ups_seed' })}, '…-key')`;
  await sql`insert into provider_objects (account_id, id, kind, key_id, member_id) values (${acct.id}, 'file_seed', 'file', ${key}, ${member})`;
  await sql`insert into batches (id, account_id, key_id, member_id, live, request_count, status) values ('msgbatch_seed', ${acct.id}, ${key}, ${member}, true, 2, 'recorded')`;
  await sql`insert into reconciliation_claims (account_id, day, claimed_by) values (${acct.id}, '2025-03-10', 'seed')`;
  await sql`insert into reconciliations (id, account_id, starting_at, ending_at, drift_percent, result)
    values ('rec_seed', ${acct.id}, ${at}, ${new Date(at.getTime() + 86_400_000)}, 0, ${sql.json({ ok: true })})`;
  await sql`insert into session_usage (account_id, session_id, totals) values (${acct.id}, ${session}, ${sql.json({ input_tokens: 3 })})`;
  await sql`insert into spend_counters (scope, label, micro_usd, period_end) values ('account', ${acct.id}, 1234, ${new Date(Date.now() + 86_400_000)})`;
  await sql`insert into spend_holds (scope, label, hold_id, micro_usd, expires_at) values ('account', ${acct.id}, 'hold_seed', 99, ${new Date(Date.now() + 60_000)})`;
  // Delivered, so no gateway on this data has work left that changes it (a copy compares equal).
  await sql`update webhook_deliveries set status = 'delivered', attempts = 1, delivered_at = ${now} where endpoint_id = ${hook.id}`;
  return { ...dash, testKey: { id: testKey.id, secret: testKey.key } };
}

/** Fails naming each table of the schema that holds no row. */
export async function assertEveryTableHasRows(stack: Stack): Promise<void> {
  await stack.gateway.writer.flush();
  const sql = stack.gateway.store.db.sql;
  const empty: string[] = [];
  for (const table of await tableNames(sql)) {
    const [row] = await sql<{ any: boolean }[]>`select exists (select 1 from ${sql(table)}) as any`;
    if (!row!.any) empty.push(table);
  }
  expect(empty, 'tables the seeder left empty: make it write a row in each').toEqual([]);
}
