import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/accounts/service';
import { hashKey } from '../src/auth/keys';
import { newId, randomBase62 } from '../src/lib/ids';
import { SecretBox } from '../src/lib/secret-box';
import { migrate } from '../src/store';
import type { WholeStore } from '../src/stores';
import { openTestStore } from './harness';

const MIGRATIONS = fileURLToPath(new URL('../migrations/', import.meta.url));
let store: WholeStore;
let close: () => Promise<void>;

beforeAll(async () => ({ store, close } = await openTestStore()));
afterAll(() => close?.());

describe('migration 066: identity bindings from the old idp_subject', () => {
  it('keeps a subject only where the person signed in with it, and tells SCIM and admin removals apart', async () => {
    const before = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
    for (const f of readdirSync(MIGRATIONS).filter((f) => Number.parseInt(f, 10) < 66))
      copyFileSync(join(MIGRATIONS, f), join(before, f));
    await migrate(store.db.sql, before);
    // Today's code writes a key's input and output token limits, from its plan's (070, which adds
    // these columns if missing).
    await store.db.sql`alter table api_keys add column limit_itpm integer, add column limit_otpm integer`;
    await store.db
      .sql`alter table plans add column default_limit_itpm integer, add column default_limit_otpm integer`;
    rmSync(before, { recursive: true, force: true });

    const sql = store.db.sql;
    const deps = { store, box: new SecretBox(randomBase62(43)), clock: Date.now };
    const { account } = await createAccount(deps, {
      name: 'Old SSO',
      plan: 'team',
      adminEmail: 'lead@old.test',
    });
    await sql`
      insert into identity_providers (account_id, name, issuer, client_id, client_secret_sealed, provision)
      values (${account.id}, 'Old', 'https://idp.old.test', 'k', 'sealed', 'domain')`;
    const member = async (email: string, subject: string | null, status = 'active') => {
      const id = newId('user');
      await sql`
        insert into members (id, account_id, email, name, role, idp_subject, status)
        values (${id}, ${account.id}, ${email}, ${email}, 'developer', ${subject}, ${status})`;
      return id;
    };
    const signedIn = await member('a@old.test', 'sub-a');
    await store.keys.create(
      {
        id: newId('key'),
        accountId: account.id,
        memberId: signedIn,
        kind: 'live',
        name: 'dashboard sign-in',
        app: null,
        environment: null,
        hint: 'kg_live_…abcd',
        createdBy: 'idp',
      },
      hashKey(`kg_live_${randomBase62(40)}`),
    );
    const scimMade = await member('b@old.test', '00u-b');
    await sql`
      insert into audit_log (id, account_id, actor, action, target_id, details)
      values (${newId('audit')}, ${account.id}, 'scim', 'member.provisioned', null, ${{ email: 'b@old.test' } as never})`;
    const removedByAdmin = await member('c@old.test', null, 'removed');
    await sql`
      insert into audit_log (id, account_id, actor, action, target_id)
      values (${newId('audit')}, ${account.id}, 'key_x', 'user.remove', ${removedByAdmin})`;
    const deprovisioned = await member('d@old.test', null, 'removed');

    expect(await migrate(sql)).toEqual(expect.arrayContaining(['066_identity_bindings.sql']));
    const rows = await sql`
      select id, idp_issuer, idp_subject, scim_external_id, scim_managed, removed_by from members
      where id = any(${[signedIn, scimMade, removedByAdmin, deprovisioned]}::text[])`;
    const byId = Object.fromEntries(rows.map(({ id, ...r }) => [id, r]));
    expect(byId[signedIn]).toEqual({
      idp_issuer: 'https://idp.old.test',
      idp_subject: 'sub-a',
      scim_external_id: 'sub-a',
      scim_managed: false,
      removed_by: null,
    });
    // Never signed in: the old value was SCIM's externalId, not a subject.
    expect(byId[scimMade]).toEqual({
      idp_issuer: null,
      idp_subject: null,
      scim_external_id: '00u-b',
      scim_managed: true,
      removed_by: null,
    });
    expect(byId[removedByAdmin]!.removed_by).toBe('admin');
    expect(byId[deprovisioned]!.removed_by).toBe('identity');
    expect((await store.identity.provider(account.id))!.linkExistingMembers).toBe(false);
  });
});
