import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallRecord } from '../../services/gateway/src/lib/call-record';
import { newTimeOrderedId } from '../../services/gateway/src/lib/ids';
import { createStore } from '../../services/gateway/src/stores';
import { copyLine } from '../../services/gateway/src/call-log/call-copy';
import { rollupShare, sumShares } from '../../services/gateway/src/call-log/call-queries';
import { openDatabase } from '../../services/gateway/src/store/database';
import { migrate } from '../../services/gateway/src/store/migrate';
import { serveArm } from '../lib/child';

/**
 * The call log's database work without a gateway: calls inserted into a fresh schema through the
 * call log's own insert (COPY and the rollup upsert), `BENCH_PG_LOAD_RATE` calls per second in
 * batches as the writer sends them at that rate. bench/shared-cores.ts runs it beside a gateway
 * whose call log sends nothing, to part what PostgreSQL costs the machine from what the gateway does.
 */
const RATE = Number(process.env.BENCH_PG_LOAD_RATE ?? 3000);
const BATCH = 500;

await serveArm(async () => {
  const url = process.env.BENCH_DATABASE_URL!;
  const dataDir = mkdtempSync(join(tmpdir(), 'keygate-pg-load-'));
  const schema = `kg_pgload_${process.pid}_${Date.now().toString(36)}`;
  const db = await openDatabase({ url, dataDir, schema, max: 1 });
  const store = createStore(db);
  await migrate(db.sql);
  await db.sql`insert into accounts (id, name, plan_id) values ('acct_pgload', 'pg load', 'team')`;
  // A finished 1 KB messages call as the emulator answers it (the same usage fields).
  const call = (): CallRecord => ({
    id: newTimeOrderedId('req'),
    accountId: 'acct_pgload',
    keyId: 'key_pgload',
    memberId: null,
    app: 'bench',
    environment: 'bench',
    groupId: null,
    client: null,
    endpoint: 'messages',
    model: 'claude-sonnet-4-5',
    stream: false,
    status: 200,
    errorType: null,
    usage: {
      input_tokens: 12,
      output_tokens: 40,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      service_tier: 'standard',
    },
    upstreamMessageId: `msg_${newTimeOrderedId('req').slice(4)}`,
    upstreamRequestId: 'req_upstream',
    retryCount: 0,
    latencyMs: 1.2,
    ttfbMs: 0.8,
    partial: false,
    estimated: false,
    createdAt: new Date(),
    requestBytes: 1100,
    responseBytes: 600,
  });
  let stopped = false;
  const everyMs = (BATCH / RATE) * 1000;
  // The load process should spend next to nothing itself: one record per batch made into its COPY
  // line and rollup share, and the batch's lines that line with the id (the first column) changed.
  const idPrefix = newTimeOrderedId('req');
  let n = 0;
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      const one = call();
      const rest = copyLine(one).slice(one.id.length);
      const lines = Array.from({ length: BATCH }, () => `${idPrefix}${n++}${rest}`);
      const rollups = sumShares([rollupShare(one)]).map((r) => ({
        ...r,
        requests: BATCH,
        input_tokens: r.input_tokens * BATCH,
        output_tokens: r.output_tokens * BATCH,
      }));
      await store.calls.insertLines(lines, rollups);
      const left = everyMs - (performance.now() - started);
      if (left > 0) await new Promise((done) => setTimeout(done, left));
    }
  })();
  return {
    info: { url: '' },
    async close() {
      stopped = true;
      await loop;
      await store.close();
      const admin = await openDatabase({ url, dataDir: '', max: 1 });
      try {
        await admin.sql`drop schema ${admin.sql(schema)} cascade`;
      } finally {
        await admin.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
});
