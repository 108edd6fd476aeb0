import {
  createAccount,
  createKey,
  createLogger,
  loadConfig,
  openDatabase,
  SecretBox,
  startGateway,
  stderrSink,
} from '@keygate/gateway';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveArm } from '../lib/child';

const SECRET = randomBytes(32).toString('base64url');
// BENCH_GUARD=1 (bench/guard.ts): no clock-driven work in the counted window. The call log is
// written when the guard asks (`settle`), the polls, background jobs and cache expiries wait an
// hour, so each run counts the same work for the same calls, however slowly valgrind runs them.
const GUARD = process.env.BENCH_GUARD === '1';
const HOUR = '3600000';
const quietTimers = GUARD
  ? {
      KEYGATE_FLUSH_INTERVAL_MS: HOUR,
      KEYGATE_SPOOL_SYNC_MS: HOUR,
      KEYGATE_INVALIDATION_POLL_MS: HOUR,
      KEYGATE_WEBHOOK_POLL_MS: HOUR,
      KEYGATE_ERROR_RATE_CHECK_MS: HOUR,
      KEYGATE_BILLING_CLOCK_MS: HOUR,
      // Calls go to the call log's thread 64 at a time or when the guard settles, not by the clock.
      KEYGATE_CALL_LOG_HANDOVER_MS: HOUR,
      // Cached keys and budgets do not expire in the window (a refill is a database round trip).
      KEYGATE_KEY_CACHE_TTL_MS: HOUR,
    }
  : {};

/** Keygate with everything on (or the call log off), against real PostgreSQL in a fresh schema. */
await serveArm(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keygate-bench-'));
  const schema = `kg_bench_${process.pid}_${Date.now().toString(36)}`;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: process.env.BENCH_DATABASE_URL!,
    KEYGATE_SECRET: SECRET,
    KEYGATE_UPSTREAM_URL: process.env.BENCH_UPSTREAM!,
    KEYGATE_DATA_DIR: dataDir,
    KEYGATE_CALL_LOG: process.env.BENCH_CALL_LOG ?? 'on',
    // The sink below is replaced on this thread, so with it the call log is written here too.
    ...(process.env.BENCH_CALL_LOG_SINK === 'none' ? { KEYGATE_CALL_LOG_THREAD: 'off' } : {}),
    ...(process.env.BENCH_SPOOL_MAX_BYTES
      ? { KEYGATE_SPOOL_MAX_BYTES: process.env.BENCH_SPOOL_MAX_BYTES }
      : {}),
    KEYGATE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    KEYGATE_METRICS_TOKEN: process.env.BENCH_METRICS_TOKEN ?? '',
    // The held-streams phase opens thousands of streams from one loopback client.
    KEYGATE_MAX_SOCKETS_PER_ADDRESS: process.env.BENCH_MAX_SOCKETS_PER_ADDRESS ?? '100000',
    ...quietTimers,
    // BENCH_SET_KEYGATE_X=v sets KEYGATE_X=v for this arm only (experiments: flush interval, spool).
    ...Object.fromEntries(
      Object.entries(process.env)
        .filter(([k]) => k.startsWith('BENCH_SET_KEYGATE_'))
        .map(([k, v]) => [k.slice('BENCH_SET_'.length), v]),
    ),
  });
  // BENCH_LOG_SINK: log lines written synchronously (`sync`, as before) or one asynchronous write per line (`unbatched`) instead of the default.
  const sinks = { sync: { sync: true }, unbatched: { minLength: 0, flushMs: 0 } } as const;
  const sink = sinks[process.env.BENCH_LOG_SINK as keyof typeof sinks];
  const gateway = await startGateway(config, {
    schema,
    ...(sink ? { logger: createLogger(config.logLevel, stderrSink(sink)) } : {}),
    ...(GUARD ? { background: false } : {}),
  });
  const sql = gateway.store.db.sql;
  // BENCH_CALL_LOG_SINK=none: the call log does all its own work (COPY line, spool, queue,
  // batches) but sends nothing to PostgreSQL, which parts the gateway's cost from the database's.
  if (process.env.BENCH_CALL_LOG_SINK === 'none') gateway.store.calls.insertLines = async () => {};
  // The schema goes after the gateway has stopped: its polls and jobs never meet a dropped table.
  const closeAndDrop = async () => {
    gateway.resolver.drainLastUsed();
    await gateway.close();
    const admin = await openDatabase({ url: process.env.BENCH_DATABASE_URL!, dataDir: '', max: 1 });
    try {
      await admin.sql`drop schema ${admin.sql(schema)} cascade`;
    } finally {
      await admin.close();
    }
  };
  const deps = { store: gateway.store, box: new SecretBox(SECRET), clock: Date.now };
  let secret: string;
  let adminKey: string | undefined;
  try {
    // BENCH_ADMIN=1 (bench/claude-code-team.ts): the account also has an admin, whose key sets up the team.
    const { account, admin } = await createAccount(deps, {
      name: 'bench',
      plan: 'team',
      providerKey: process.env.BENCH_PROVIDER_KEY!,
      ...(process.env.BENCH_ADMIN === '1' ? { adminEmail: 'lead@bench.example', adminName: 'Lead' } : {}),
    });
    adminKey = admin?.secret;
    ({ secret } = await createKey(deps, {
      accountId: account.id,
      kind: 'live',
      memberId: null,
      app: 'bench',
      environment: 'bench',
      // Every call goes through the rate limits, as a key with the plan's limits does, but the
      // limits are set out of reach: at the bench's thousands of calls a second, the plan's own
      // figures answer most of a run 429 (and the serial client measured refusals).
      limitRpm: 2_000_000_000,
      limitTpm: null,
      limitItpm: 2_000_000_000,
      limitOtpm: 2_000_000_000,
    }));
  } catch (err) {
    await closeAndDrop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    info: { url: gateway.url, appKey: secret, schema, ...(adminKey ? { adminKey } : {}) },
    settle: () => gateway.writer.settle(),
    async close() {
      await gateway.writer.flush();
      const [calls] = await sql<
        { n: number; served: number }[]
      >`select count(*)::int as n, (count(*) filter (where status < 400))::int as served from calls`;
      const [rollup] = await sql<
        { n: number }[]
      >`select coalesce(sum(requests), 0)::int as n from usage_hourly`;
      const others = await sql<{ status: number; error_type: string | null; n: number }[]>`
        select status, error_type, count(*)::int as n from calls where status >= 400 group by 1, 2 order by 3 desc`;
      const stats = {
        callsWritten: calls?.n ?? 0,
        callsServed: calls?.served ?? 0,
        rollupRequests: rollup?.n ?? 0,
        dropped: gateway.writer.dropped,
        notServed:
          others.map((o) => `${o.n} × ${o.status} ${o.error_type ?? ''}`.trim()).join(', ') || 'none',
      };
      await closeAndDrop();
      rmSync(dataDir, { recursive: true, force: true });
      return stats;
    },
  };
});
