import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../src/store';
import { MIGRATIONS, storeMigratedBefore } from './kit/migrated-before';

let store: Store;
let close: () => Promise<void>;

/**
 * Migration 082 on a database of the release before it: batches take the upstream 081 recorded;
 * files of an account without a provider key take its first upstream that serves files (where
 * their calls went until then); files of an account with one stay the provider key's, as do the
 * objects only the provider key serves.
 */
beforeAll(async () => {
  ({ store, close } = await storeMigratedBefore('082_'));
  const sql = store.db.sql;
  await sql`insert into accounts (id, name, plan_id) values ('acct_keyless', 'Clouds only', 'team')`;
  await sql`insert into accounts (id, name, plan_id, provider_key_sealed) values ('acct_keyed', 'Keyed', 'team', 'sealed')`;
  const upstream = (id: string, account: string, position: number, kind: string) =>
    sql`insert into account_upstreams (id, account_id, position, kind, base_url, auth, credential_sealed, credential_hint)
        values (${id}, ${account}, ${position}, ${kind}, 'https://cloud.example.test', 'bearer', 'sealed', '…1234')`;
  await upstream('ups_bedrock', 'acct_keyless', 0, 'bedrock');
  await upstream('ups_aws', 'acct_keyless', 1, 'aws');
  await upstream('ups_anthropic', 'acct_keyless', 2, 'anthropic');
  await upstream('ups_keyed_aws', 'acct_keyed', 0, 'aws');
  const object = (account: string, id: string, kind: string) =>
    sql`insert into provider_objects (account_id, id, kind) values (${account}, ${id}, ${kind})`;
  await object('acct_keyless', 'file_keyless', 'file');
  await object('acct_keyless', 'skill_keyless', 'skill');
  await object('acct_keyless', 'msgbatch_keyless', 'batch');
  await object('acct_keyed', 'file_keyed', 'file');
  await sql`insert into batches (id, account_id, live, request_count, upstream_id)
            values ('msgbatch_keyless', 'acct_keyless', true, 1, 'ups_anthropic')`;
  await migrate(sql, MIGRATIONS);
});
afterAll(() => close?.());

describe('migration 082: where each object lives', () => {
  it('gives batches their 081 upstream, keyless accounts’ files their first files upstream, and the rest the provider key', async () => {
    const rows = await store.db.sql<{ id: string; upstream_id: string | null }[]>`
      select id, upstream_id from provider_objects order by id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.upstream_id]))).toEqual({
      file_keyed: null,
      file_keyless: 'ups_aws',
      msgbatch_keyless: 'ups_anthropic',
      skill_keyless: null,
    });
  });
});
