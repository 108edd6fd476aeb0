import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createKey } from '../src/accounts/service';
import { randomBase62 } from '../src/lib/ids';
import { SecretBox } from '../src/lib/secret-box';
import { migrate, type Store } from '../src/store';
import { openTestStore } from './harness';

const MIGRATIONS = fileURLToPath(new URL('../migrations/', import.meta.url));
let store: Store;
let close: () => Promise<void>;

beforeAll(async () => ({ store, close } = await openTestStore()));
afterAll(() => close?.());

describe('migration 016: member keys named by the old default get the member in their name', () => {
  it('renames only names equal to the old default, and only keys of a member', async () => {
    const before = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
    // The schema as it stood at 015, plus the later columns today's code writes with a key
    // (065: resumable_streams); the rest is applied in order below.
    const early = (f: string) => Number.parseInt(f, 10) < 16 || f.startsWith('065_');
    for (const f of readdirSync(MIGRATIONS).filter(early)) copyFileSync(join(MIGRATIONS, f), join(before, f));
    await migrate(store.db.sql, before);
    // Today's code writes a key's input and output token limits, from its plan's (070, which adds
    // these columns if missing).
    await store.db.sql`alter table api_keys add column limit_itpm integer, add column limit_otpm integer`;
    await store.db
      .sql`alter table plans add column default_limit_itpm integer, add column default_limit_otpm integer`;
    rmSync(before, { recursive: true, force: true });

    const deps = { store, box: new SecretBox(randomBase62(43)), clock: Date.now };
    // No provider key: the key history it would write is a later migration's table (034), and
    // this schema stops at 015.
    const { account, admin } = await createAccount(deps, {
      name: 'Old names',
      plan: 'team',
      adminEmail: 'lead@old.test',
    });
    const key = async (
      name: string,
      opts: { member?: boolean; kind?: 'live' | 'test'; app?: string; env?: string },
    ) =>
      (
        await createKey(deps, {
          accountId: account.id,
          kind: opts.kind ?? 'live',
          name,
          memberId: opts.member ? admin!.member.id : null,
          app: opts.app ?? null,
          environment: opts.env ?? null,
        })
      ).key.id;
    const ids = {
      plain: await key('live key', { member: true }),
      scoped: await key('test key for ci/prod', { member: true, kind: 'test', app: 'ci', env: 'prod' }),
      chosen: await key("lead's laptop", { member: true }),
      app: await key('live key for web/prod', { app: 'web', env: 'prod' }),
      mismatch: await key('live key', { member: true, app: 'web' }),
    };

    expect(await migrate(store.db.sql)).toEqual(expect.arrayContaining(['016_member_key_names.sql']));
    const names = await store.keys.names(account.id, Object.values(ids));
    expect(Object.fromEntries(Object.entries(ids).map(([k, id]) => [k, names.get(id)]))).toEqual({
      plain: 'live key of lead@old.test',
      scoped: 'test key of lead@old.test for ci/prod',
      chosen: "lead's laptop",
      app: 'live key for web/prod',
      // "live key" was not this key's default (it has an app): someone chose it.
      mismatch: 'live key',
    });
  });
});
