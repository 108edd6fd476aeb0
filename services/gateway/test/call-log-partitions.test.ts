import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { maintainCallLog } from '../src/call-log/retention';
import { randomBase62 } from '../src/lib/ids';
import { migrate, type Store } from '../src/store';
import { callAt, openTestStore } from './harness';

const MIGRATIONS = fileURLToPath(new URL('../migrations/', import.meta.url));
const DAY = 86_400_000;
const opened: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

async function freshStore(upTo?: number): Promise<Store> {
  const { store, close } = await openTestStore();
  opened.push(close);
  if (upTo === undefined) {
    await migrate(store.db.sql);
    return store;
  }
  const dir = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
  for (const f of readdirSync(MIGRATIONS).filter(
    (f) => /^\d+_.+\.sql$/.test(f) && Number.parseInt(f, 10) <= upTo,
  ))
    copyFileSync(join(MIGRATIONS, f), join(dir, f));
  await migrate(store.db.sql, dir);
  rmSync(dir, { recursive: true, force: true });
  return store;
}

const monthName = (d: Date) => `calls_p${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
const partitionOf = async (store: Store, id: string) =>
  (
    await store.db.sql<
      { part: string }[]
    >`select tableoid::regclass::text as part from calls where id = ${id}`
  ).map((r) => r.part);

async function seedAccount(store: Store, plan: string): Promise<string> {
  const id = `acct_${randomBase62(12)}`;
  await store.db.sql`insert into accounts (id, name, plan_id) values (${id}, ${`Plan ${plan}`}, ${plan})`;
  return id;
}

describe('the call log is partitioned by month', () => {
  it('has partitions for this month and the next, ahead of time', async () => {
    const store = await freshStore();
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    const names = (await store.partitions.list()).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining([monthName(now), monthName(next)]));
    const [kind] = await store.db.sql`select c.relkind from pg_class c where c.oid = 'calls'::regclass`;
    expect(kind!.relkind).toBe('p');

    // A maintenance run a month later creates the month after that.
    const later = new Date(next.getTime() + 5 * DAY);
    const result = await maintainCallLog(store, later);
    const afterNext = new Date(Date.UTC(later.getUTCFullYear(), later.getUTCMonth() + 1, 1));
    expect(result.ensured).toEqual(expect.arrayContaining([monthName(later), monthName(afterNext)]));
    expect((await store.partitions.list()).map((p) => p.name)).toContain(monthName(afterNext));
  });

  it('takes a call in a month without a partition (default partition), moves it when the month gets one, and never counts it twice', async () => {
    const store = await freshStore();
    const account = await seedAccount(store, 'team');
    const far = callAt(account, '2031-07-14T08:00:00Z', { usage: { input_tokens: 10, output_tokens: 5 } });
    await store.calls.insertBatch([far]);
    expect(await partitionOf(store, far.id)).toEqual(['calls_default']);
    await store.calls.insertBatch([far]);

    await maintainCallLog(store, new Date());
    expect(await partitionOf(store, far.id)).toEqual(['calls_p203107']);
    const [stray] = await store.db.sql`select count(*)::int as n from calls_default`;
    expect(stray!.n).toBe(0);
    // A replay after the move meets the same (id, created_at) in the month's partition.
    await store.calls.insertBatch([far, far]);
    expect(await partitionOf(store, far.id)).toEqual(['calls_p203107']);
    const [rollup] = await store.db
      .sql`select requests, input_tokens::int as input from usage_hourly where account_id = ${account}`;
    expect(rollup).toEqual({ requests: 1, input: 10 });
  });
});

describe('retention per plan', () => {
  it('drops months older than every plan keeps, deletes per account inside newer ones, and the rollups keep all usage', async () => {
    const store = await freshStore();
    await store.db
      .sql`update plans set retention_days = case id when 'solo' then 30 when 'scale' then 365 else retention_days end`;
    const solo = await seedAccount(store, 'solo');
    const scale = await seedAccount(store, 'scale');
    const [{ maxDays }] = [await store.partitions.retentionBounds()];
    const now = new Date();
    const ago = (days: number) => new Date(now.getTime() - days * DAY).toISOString();
    const ages = [maxDays + 40, 40, 5];
    const calls = [solo, scale].flatMap((account) =>
      ages.map((days) => callAt(account, ago(days), { usage: { input_tokens: 100, output_tokens: 7 } })),
    );
    await store.calls.insertBatch(calls);
    const ancient = monthName(new Date(ago(maxDays + 40)));
    // Claude Code telemetry events follow the same retention; its daily counters stay.
    for (const account of [solo, scale])
      for (const days of [40, 5])
        await store.telemetry.writeEvents({ accountId: account, memberId: 'user_x', keyId: 'key_x' }, [
          {
            sessionId: 's',
            name: 'api_request',
            at: new Date(ago(days)),
            promptId: null,
            requestId: null,
            model: null,
            costUsd: null,
            durationMs: null,
            inputTokens: null,
            outputTokens: null,
            cacheReadTokens: null,
            cacheCreationTokens: null,
            attrs: {},
          },
        ]);

    const result = await maintainCallLog(store, now);
    expect(result.dropped).toContain(ancient);
    expect((await store.partitions.list()).map((p) => p.name)).not.toContain(ancient);
    expect(result.deleted).toBe(1);
    expect(result.telemetryDeleted).toBe(1);
    const events = await store.db.sql<{ account_id: string }[]>`select account_id from claude_code_events`;
    expect(events.filter((e) => e.account_id === solo)).toHaveLength(1);
    expect(events.filter((e) => e.account_id === scale)).toHaveLength(2);

    const left = await store.db.sql<{ account_id: string; n: number }[]>`
      select account_id, count(*)::int as n from calls group by account_id order by account_id`;
    const count = (a: string) => left.find((r) => r.account_id === a)?.n ?? 0;
    expect(count(solo)).toBe(1); // 40 days > solo's 30
    expect(count(scale)).toBe(2); // 40 and 5 days; the month older than every plan is gone

    // Reports read the hourly rollups: every call still counts.
    const rows = await store.usage.fromRollups({
      accountId: null,
      from: new Date(ago(maxDays + 80)),
      to: now,
      bucketSeconds: null,
      groupBy: ['account_id'],
    });
    const usage = Object.fromEntries(
      rows.map((r) => [r.account_id, { requests: r.requests, input: r.input_tokens }]),
    );
    expect(usage[solo]).toEqual({ requests: 3, input: 300 });
    expect(usage[scale]).toEqual({ requests: 3, input: 300 });

    // Idempotent: a second run (another instance, the next day) finds nothing to do.
    const again = await maintainCallLog(store, now);
    expect({ dropped: again.dropped, deleted: again.deleted }).toEqual({ dropped: [], deleted: 0 });
  });
});

describe('010_calls_partitioned on an existing call log', () => {
  it('keeps every row, its indexes and the idempotent insert, with a partition per month held', async () => {
    const store = await freshStore(9);
    const account = await seedAccount(store, 'team');
    const old = [
      callAt(account, '2025-01-31T23:59:59.999Z', { usage: { input_tokens: 1, output_tokens: 1 } }),
      callAt(account, '2025-02-01T00:00:00Z', { usage: { input_tokens: 2, output_tokens: 1 } }),
      callAt(account, '2025-02-20T12:00:00Z', { usage: { input_tokens: 3, output_tokens: 1 } }),
    ];
    // What the code before 010 wrote: the row and its rollup, keyed on id alone.
    const sql = store.db.sql;
    for (const c of old) {
      await sql`insert into calls (id, account_id, endpoint, status, input_tokens, output_tokens, latency_ms, created_at)
                values (${c.id}, ${account}, 'messages', 200, ${c.usage!.input_tokens!}, 1, 5, ${c.createdAt}) on conflict (id) do nothing`;
      await sql`insert into usage_hourly (account_id, endpoint, hour, model, requests, input_tokens, output_tokens)
                values (${account}, 'messages', date_trunc('hour', ${c.createdAt}::timestamptz), 'claude-opus-4-5', 1, ${c.usage!.input_tokens!}, 1)
                on conflict (account_id, endpoint, hour, key_id, member_id, model, group_id) do update
                set requests = usage_hourly.requests + 1, input_tokens = usage_hourly.input_tokens + excluded.input_tokens`;
    }
    const [before] = await store.db.sql`select relkind as kind from pg_class where oid = 'calls'::regclass`;
    expect(before!.kind).toBe('r');

    // Later migrations apply after it; 010 is the one that converts the table.
    expect((await migrate(store.db.sql))[0]).toBe('010_calls_partitioned.sql');
    expect(await partitionOf(store, old[0]!.id)).toEqual(['calls_p202501']);
    expect(await partitionOf(store, old[1]!.id)).toEqual(['calls_p202502']);
    expect(await partitionOf(store, old[2]!.id)).toEqual(['calls_p202502']);
    const indexes = await store.db.sql<
      { name: string }[]
    >`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'calls'`;
    expect(indexes.map((i) => i.name).sort()).toEqual([
      'calls_account_time',
      'calls_agent_tree',
      'calls_claude_code',
      'calls_group',
      'calls_key_time',
      'calls_pkey',
      'calls_trouble',
    ]);
    const [plan] = await store.db.sql`select retention_days from plans where id = 'solo'`;
    expect(plan!.retention_days).toBeGreaterThan(0);

    // A record written before the migration, retried after it, is still one call.
    await store.calls.insertBatch([
      old[2]!,
      callAt(account, '2025-02-20T12:30:00Z', { usage: { input_tokens: 4, output_tokens: 1 } }),
    ]);
    const [total] = await store.db.sql`select count(*)::int as n from calls where account_id = ${account}`;
    expect(total!.n).toBe(4);
    const [rollup] = await store.db
      .sql`select sum(requests)::int as n, sum(input_tokens)::int as input from usage_hourly where account_id = ${account}`;
    expect(rollup).toEqual({ n: 4, input: 10 });
  });
});
