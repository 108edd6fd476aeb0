import { randomUUID } from 'node:crypto';
import { createStore } from '../../services/gateway/src/stores';
import { openDatabase } from '../../services/gateway/src/store/index';
import type { CallRecord } from '../../services/gateway/src/lib/call-record';

const BATCH = 100;
const RECORDS = 20_000;
const REPORTS = 16;

function record(accountId: string, i: number, at: number): CallRecord {
  return {
    id: `req_bench${randomUUID().replaceAll('-', '')}`,
    accountId,
    keyId: null,
    memberId: null,
    app: 'bench',
    environment: null,
    groupId: null,
    client: null,
    endpoint: 'messages',
    model: i % 2 ? 'claude-opus-4-5' : 'claude-sonnet-4-5',
    stream: false,
    status: 200,
    errorType: null,
    usage: { input_tokens: 100, output_tokens: 20 },
    upstreamMessageId: null,
    upstreamRequestId: null,
    retryCount: 0,
    latencyMs: 5,
    ttfbMs: 2,
    partial: false,
    estimated: false,
    createdAt: new Date(at - (i % 3600) * 1000),
  };
}

/** The embedded engine on its own: call-log inserts as the writer batches them, and reports run at once. */
export async function engineFigures(dataDir: string, accountId: string) {
  const db = await openDatabase({ url: null, dataDir });
  const store = createStore(db);
  try {
    const now = Date.now();
    const t0 = performance.now();
    for (let i = 0; i < RECORDS; i += BATCH) {
      await store.calls.insertBatch(Array.from({ length: BATCH }, (_, j) => record(accountId, i + j, now)));
    }
    const callLogRecordsPerSecond = RECORDS / ((performance.now() - t0) / 1000);

    const report = () =>
      store.usage.fromCalls({
        accountId,
        from: new Date(now - 3_600_000),
        to: new Date(now + 1),
        bucketSeconds: 60,
        groupBy: ['model'],
      });
    await report();
    const t1 = performance.now();
    for (let i = 0; i < REPORTS; i++) await report();
    const reportsSequentialMs = performance.now() - t1;
    const t2 = performance.now();
    await Promise.all(Array.from({ length: REPORTS }, report));
    const reportsConcurrentMs = performance.now() - t2;
    return {
      callLogRecordsPerSecond,
      reports: REPORTS,
      reportsSequentialMs,
      reportsConcurrentMs,
      callsInTable: RECORDS,
    };
  } finally {
    await db.close();
  }
}
