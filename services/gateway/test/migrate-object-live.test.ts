import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../src/store';
import { MIGRATIONS, storeMigratedBefore } from './kit/migrated-before';

let store: Store;
let close: () => Promise<void>;

/**
 * Migration 083 on a database of the release before it: an object a test key made is marked so
 * (its lists are the test key's), every other one is live, those of no key or a removed key too.
 */
beforeAll(async () => {
  ({ store, close } = await storeMigratedBefore('083_'));
  const sql = store.db.sql;
  await sql`insert into accounts (id, name, plan_id) values ('acct_1', 'One', 'team')`;
  const key = (id: string, kind: string) =>
    sql`insert into api_keys (id, account_id, kind, name, hint) values (${id}, 'acct_1', ${kind}, ${id}, '…abcd')`;
  await key('key_live', 'live');
  await key('key_test', 'test');
  await key('key_admin', 'admin');
  const object = (id: string, keyId: string | null) =>
    sql`insert into provider_objects (account_id, id, kind, key_id) values ('acct_1', ${id}, 'file', ${keyId})`;
  await object('file_live', 'key_live');
  await object('file_test', 'key_test');
  await object('file_admin', 'key_admin');
  await object('file_no_key', null);
  await object('file_other_key', 'kgm_token_gone');
  await migrate(sql, MIGRATIONS);
});
afterAll(() => close?.());

describe('migration 083: live and test objects', () => {
  it("marks what test keys made, and only that, as the test keys'", async () => {
    const rows = await store.db.sql<
      { id: string; live: boolean }[]
    >`select id, live from provider_objects order by id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.live]))).toEqual({
      file_admin: true,
      file_live: true,
      file_no_key: true,
      file_other_key: true,
      file_test: false,
    });
  });
});
