import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../src/store';
import { MIGRATIONS, storeMigratedBefore } from './kit/migrated-before';

let store: Store;
let close: () => Promise<void>;

type Limits = {
  id: string;
  rpm: number | null;
  tpm: number | null;
  itpm: number | null;
  otpm: number | null;
};

/**
 * Migration 070 on a database that had the plans' old defaults (team: 120 requests and 200,000
 * tokens a minute, counted a token a byte): keys that still carry them take the provider's three
 * new ones, keys with limits of their own keep them, and the keys issue 29 found made without the
 * plan's defaults (a service account's, an identity provider's sign-in key) take them.
 */
beforeAll(async () => {
  ({ store, close } = await storeMigratedBefore('070_'));
  const sql = store.db.sql;
  await sql`insert into accounts (id, name, plan_id) values ('acct_t', 'Team', 'team')`;
  await sql`insert into service_accounts (id, account_id, name) values ('sa_1', 'acct_t', 'ci')`;
  const key = (
    id: string,
    kind: string,
    rpm: number | null,
    tpm: number | null,
    createdBy: string | null = null,
  ) =>
    sql`insert into api_keys (id, account_id, kind, name, hint, limit_rpm, limit_tpm, created_by)
        values (${id}, 'acct_t', ${kind}, ${id}, 'kg_…', ${rpm}, ${tpm}, ${createdBy})`;
  await key('key_defaults', 'live', 120, 200_000);
  await key('key_own', 'live', 10, 5_000);
  await key('key_none', 'live', null, null);
  await key('key_sa', 'live', null, null);
  await sql`update api_keys set service_account_id = 'sa_1' where id = 'key_sa'`;
  await key('key_idp', 'live', null, null, 'idp');
  await key('key_admin', 'admin', null, null);
  await migrate(sql, MIGRATIONS);
});
afterAll(() => close?.());

describe('migration 070: the provider rate limits', () => {
  it("moves keys that carry the plan's old defaults to the new ones, and keeps keys' own limits", async () => {
    const rows = await store.db.sql<Limits[]>`
      select id, limit_rpm as rpm, limit_tpm as tpm, limit_itpm as itpm, limit_otpm as otpm
      from api_keys where account_id = 'acct_t' order by id`;
    const team = { rpm: 2000, tpm: null, itpm: 2_000_000, otpm: 400_000 };
    const none = { rpm: null, tpm: null, itpm: null, otpm: null };
    expect(Object.fromEntries(rows.map(({ id, ...limits }) => [id, limits]))).toEqual({
      key_admin: none,
      key_defaults: team,
      key_idp: team,
      key_none: none,
      key_own: { rpm: 10, tpm: 5_000, itpm: null, otpm: null },
      key_sa: team,
    });
    const [plan] = await store.db.sql`
      select default_limit_rpm, default_limit_tpm, default_limit_itpm, default_limit_otpm from plans where id = 'team'`;
    expect(plan).toEqual({
      default_limit_rpm: 2000,
      default_limit_tpm: null,
      default_limit_itpm: 2_000_000,
      default_limit_otpm: 400_000,
    });
  });
});
