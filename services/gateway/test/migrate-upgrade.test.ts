import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { migrate, type Store } from '../src/store';
import { writeAudit } from '../src/tenancy/audit-queries';
import { callAt, openTestStore } from './harness';

const MIGRATIONS = fileURLToPath(new URL('../migrations/', import.meta.url));
let store: Store;
let close: () => Promise<void>;

const H1 = '2025-05-01T10:00:00Z';
const H2 = '2025-05-01T11:00:00Z';

/** A database at migration 003, holding rollups the old way (requests = calls below 400) and audit rows without a sequence. */
beforeAll(async () => {
  const upTo003 = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
  for (const f of readdirSync(MIGRATIONS).filter((f) => /^00[1-3]_/.test(f)))
    copyFileSync(join(MIGRATIONS, f), join(upTo003, f));
  ({ store, close } = await openTestStore());
  const sql = store.db.sql;
  expect(await migrate(sql, upTo003)).toHaveLength(3);
  rmSync(upTo003, { recursive: true, force: true });

  const call = (minute: number, status: number, error_type: string | null) => ({
    id: `req_${randomBase62(24)}`,
    account_id: 'acct_old',
    key_id: 'key_a',
    endpoint: 'messages',
    model: 'claude-opus-4-5',
    status,
    error_type,
    latency_ms: 5,
    created_at: new Date(Date.parse(H1) + minute * 60_000),
  });
  // 3 served, 1 stream that broke after its 200, 2 refused, 1 upstream 529.
  const calls = [
    call(1, 200, null),
    call(2, 200, null),
    call(3, 200, null),
    call(4, 200, 'overloaded_error'),
    call(5, 400, 'invalid_request_error'),
    call(6, 429, 'rate_limit_error'),
    call(7, 529, 'overloaded_error'),
  ];
  await sql`insert into calls ${sql(calls)}`;
  const rollup = {
    account_id: 'acct_old',
    endpoint: 'messages',
    key_id: 'key_a',
    model: 'claude-opus-4-5',
    input_tokens: 0,
  };
  await sql`insert into usage_hourly ${sql([
    // What the old code wrote for those calls: 4 below 400, 4 errors.
    { ...rollup, hour: new Date(H1), requests: 4, errors: 4 },
    // A row whose calls are gone: 5 below 400 and 3 errors, of which at least 0 and at most 3 were below 400.
    { ...rollup, hour: new Date(H2), requests: 5, errors: 3 },
  ])}`;
  // Three entries of one change, sharing a timestamp: ids order them c, a, b.
  const at = new Date('2025-05-01T10:30:00Z');
  await sql`insert into audit_log ${sql(['audit_a', 'audit_b', 'audit_c'].map((id) => ({ id, account_id: 'acct_old', actor: 'cli', action: `old.${id}`, created_at: at })))}`;

  expect((await migrate(sql)).sort()).toEqual(
    readdirSync(MIGRATIONS)
      .filter((f) => /^\d+_.+\.sql$/.test(f) && !/^00[1-3]_/.test(f))
      .sort(),
  );
});

afterAll(() => close?.());

describe('004_counts_add_up on existing rollups', () => {
  it('recomputes a row from its calls: requests = every call, errors unchanged', async () => {
    const [row] = await store.db.sql`select requests, errors from usage_hourly where hour = ${new Date(H1)}`;
    expect(row).toEqual({ requests: 7, errors: 4 });
  });

  it('corrects a row without its calls arithmetically (old requests + old errors), so errors ≤ requests', async () => {
    const [row] = await store.db.sql`select requests, errors from usage_hourly where hour = ${new Date(H2)}`;
    expect(row).toEqual({ requests: 8, errors: 3 });
  });

  it('new calls fold into the corrected rows under the new rule', async () => {
    await store.calls.insertBatch([
      callAt('acct_old', '2025-05-01T10:50:00Z', {
        keyId: 'key_a',
        status: 200,
        errorType: 'api_error',
        partial: true,
        usage: { input_tokens: 3, output_tokens: 1 },
      }),
      callAt('acct_old', '2025-05-01T10:51:00Z', {
        keyId: 'key_a',
        status: 200,
        usage: { input_tokens: 3, output_tokens: 1 },
      }),
    ]);
    const [row] = await store.db.sql`select requests, errors from usage_hourly where hour = ${new Date(H1)}`;
    expect(row).toEqual({ requests: 9, errors: 5 });
  });
});

describe('005_audit_sequence on existing audit rows', () => {
  it('numbers old rows in their old listing order, and new rows after them', async () => {
    await writeAudit(store.db.sql, 'acct_old', { actor: 'cli', action: 'new.entry', targetId: null });
    const page = await store.audit.list('acct_old', {}, { limit: 10 });
    expect(page.rows.map((r) => r.action).reverse()).toEqual([
      'old.audit_a',
      'old.audit_b',
      'old.audit_c',
      'new.entry',
    ]);
  });
});
