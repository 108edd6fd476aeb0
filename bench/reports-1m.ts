import { DATABASE_URL } from './lib/arms';
import { randomBytes } from 'node:crypto';
/**
 * Report latency at a million calls (not a timed test): `tsx bench/reports-1m.ts`.
 *
 * Seeds 10 accounts, 50 members, 200 keys and 20,000 request groups into a fresh schema of
 * the PostgreSQL at TEST_DATABASE_URL / DATABASE_URL, then 100,000 calls over 90 days, measures,
 * grows the call log to 1,000,000 calls over the same 90 days, and measures again. Each figure
 * is the server time of one request to the real app (routing, validation, queries, JSON), through
 * the operator's view of an account (`/operator/v1/accounts/:id/…`, the account API's own routes).
 * The schema is dropped at the end unless KEEP_SCHEMA=1.
 */
import { performance } from 'node:perf_hooks';
import { createApp } from '../services/gateway/src/app';
import { appDepsFrom } from '../services/gateway/test/kit/route-table';
import { createLogger } from '../services/gateway/src/lib/logger';
import { SecretBox } from '../services/gateway/src/lib/secret-box';
import { createStore, type WholeStore } from '../services/gateway/src/stores';
import { migrate, openDatabase, type Store } from '../services/gateway/src/store/index';
import { accountId, checkRollups, seedAccounts, seedCalls, SHAPE } from './lib/reports-seed';
import { median, percentile } from './lib/stats';

const TOTAL = Number(process.env.CALLS ?? 1_000_000);
const WARM_RUNS = Number(process.env.WARM_RUNS ?? 40);
const TOKEN = 'bench-operator-token-0123456789';
const DAY = 86_400_000;
const END = Math.floor(Date.now() / DAY) * DAY;
const iso = (t: number) => new Date(t).toISOString();

type Scenario = { name: string; run: (a: number) => Promise<void> };

function appFor(store: WholeStore) {
  const deps = appDepsFrom({
    store,
    box: new SecretBox(randomBytes(32).toString('base64url')),
    clock: () => END,
    logger: createLogger('error'),
  });
  return createApp({ ...deps, operatorToken: TOKEN });
}

function scenarios(app: ReturnType<typeof appFor>, deepCursor: (a: number) => string): Scenario[] {
  const get = async (path: string) => {
    const res = await app.request(path, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body}`);
    return JSON.parse(body) as { next_page?: string | null; data: unknown[] };
  };
  const acct = (a: number) => `/operator/v1/accounts/${accountId(a)}`;
  return [
    {
      name: 'overview, 30 days: usage by member + by model + by day',
      run: async (a) => {
        const q = `starting_at=${iso(END - 30 * DAY)}&ending_at=${iso(END)}`;
        await Promise.all(
          ['member', 'model', 'day'].map((by) => get(`${acct(a)}/usage_summary?by=${by}&${q}`)),
        );
      },
    },
    {
      name: 'daily usage report, 90 days by model (3 pages of 31 days)',
      run: async (a) => {
        let page: string | null | undefined = null;
        do {
          const q: string = `starting_at=${iso(END - 90 * DAY)}&ending_at=${iso(END)}&bucket_width=1d&limit=31&group_by[]=model${page ? `&page=${page}` : ''}`;
          page = (await get(`${acct(a)}/usage_report/messages?${q}`)).next_page;
        } while (page);
      },
    },
    {
      name: 'call log, first page (50 calls)',
      run: async (a) => void (await get(`${acct(a)}/requests?limit=50`)),
    },
    {
      name: 'call log, deep cursor page (60 days back)',
      run: async (a) => void (await get(`${acct(a)}/requests?limit=50&after_id=${deepCursor(a)}`)),
    },
    {
      name: 'call log, one member, first page',
      run: async (a) =>
        void (await get(`${acct(a)}/requests?limit=50&user_id=user_bench${String(a).padStart(2, '0')}1`)),
    },
  ];
}

async function time(work: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

interface Figure {
  name: string;
  cold: number[];
  warm: number[];
}

/**
 * Cold: the first request of each scenario for each account, on a fresh connection pool (no
 * prepared statements, no plans), before any warm run. Warm: the same requests repeated.
 */
async function measure(schema: string): Promise<Figure[]> {
  const db = await openDatabase({ url: DATABASE_URL, dataDir: '', schema });
  const store = createStore(db);
  try {
    const cursors = await db.sql<{ a: string; id: string }[]>`
      select distinct on (account_id) account_id as a, id from calls
      where created_at < ${new Date(END - 60 * DAY)} order by account_id, created_at desc, id desc`;
    const cursor = new Map(cursors.map((c) => [c.a, c.id]));
    const list = scenarios(appFor(store), (a) => cursor.get(accountId(a))!);
    const figures: Figure[] = list.map((s) => ({ name: s.name, cold: [], warm: [] }));
    for (const [i, s] of list.entries())
      for (let a = 0; a < SHAPE.accounts; a++) figures[i]!.cold.push(await time(() => s.run(a)));
    for (let r = 0; r < WARM_RUNS; r++)
      for (const [i, s] of list.entries()) figures[i]!.warm.push(await time(() => s.run(r % SHAPE.accounts)));
    return figures;
  } finally {
    await store.close();
  }
}

async function sizes(store: Store) {
  const [row] = await store.db.sql<
    { calls: number; rollups: number; calls_mb: number; rollups_mb: number }[]
  >`
    select (select count(*) from calls)::int as calls, (select count(*) from usage_hourly)::int as rollups,
           round(pg_total_relation_size('calls') / 1048576.0)::int as calls_mb, round(pg_total_relation_size('usage_hourly') / 1048576.0)::int as rollups_mb`;
  return row!;
}

async function grow(store: Store, every: number, label: string) {
  const t0 = performance.now();
  let n = 0;
  const chunk = 100_000;
  for (let lo = 0; lo < TOTAL; lo += chunk)
    n += await seedCalls(store.db.sql, {
      lo,
      hi: Math.min(TOTAL, lo + chunk),
      total: TOTAL,
      end: new Date(END),
      every,
    });
  // What autovacuum does after a load like this one: statistics, and the rollups' dead row versions gone.
  await store.db.sql`vacuum analyze calls`;
  await store.db.sql`vacuum analyze usage_hourly`;
  await checkRollups(store.db.sql);
  console.error(`${label}: ${n} calls in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

const fmt = (v: number) => v.toFixed(1);

function table(at: Record<string, Figure[]>): string {
  const cols = Object.keys(at);
  const head = `| request | ${cols.map((c) => `${c}: cold p50 / p99 | ${c}: warm p50 / p99`).join(' | ')} |`;
  const rule = `|---|${cols.map(() => '---:|---:').join('|')}|`;
  const rows = at[cols[0]!]!.map((f, i) => {
    const cells = cols.map((c) => {
      const g = at[c]![i]!;
      return `${fmt(median(g.cold))} / ${fmt(percentile(g.cold, 99))} | ${fmt(median(g.warm))} / ${fmt(percentile(g.warm, 99))}`;
    });
    return `| ${f.name} | ${cells.join(' | ')} |`;
  });
  return [head, rule, ...rows].join('\n');
}

async function main() {
  const schema = `kg_bench_reports_${Date.now().toString(36)}`;
  const db = await openDatabase({ url: DATABASE_URL, dataDir: '', schema });
  await migrate(db.sql);
  const store = createStore(db);
  const at: Record<string, Figure[]> = {};
  const shape: string[] = [];
  try {
    await seedAccounts(db.sql);
    await grow(store, 10, 'every 10th call');
    let s = await sizes(store);
    shape.push(
      `${s.calls.toLocaleString('en')} calls (${s.calls_mb} MB) → ${s.rollups.toLocaleString('en')} rollup rows (${s.rollups_mb} MB)`,
    );
    at[`${Math.round(s.calls / 1000)}k calls`] = await measure(schema);
    await grow(store, -10, 'the other nine in ten');
    s = await sizes(store);
    shape.push(
      `${s.calls.toLocaleString('en')} calls (${s.calls_mb} MB) → ${s.rollups.toLocaleString('en')} rollup rows (${s.rollups_mb} MB)`,
    );
    at[`${Math.round(s.calls / 1000)}k calls`] = await measure(schema);
  } finally {
    if (process.env.KEEP_SCHEMA !== '1') await db.sql`drop schema ${db.sql(schema)} cascade`;
    await store.close();
  }
  console.log(
    `Sizes: ${shape.join('; ')}. Milliseconds of server time; cold n=${SHAPE.accounts} (one per account), warm n=${WARM_RUNS}.\n`,
  );
  console.log(table(at));
}

await main();
