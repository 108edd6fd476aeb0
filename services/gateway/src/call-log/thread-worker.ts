import { parentPort, workerData } from 'node:worker_threads';
import type { CallRecord } from '../lib/call-record';
import { type Logger, serializeError } from '../lib/logger';
import { callQueries } from './call-queries';
import { connectOne } from '../store/database';
import { Spool } from './spool';
import type { FromThread, ThreadData, ToThread } from './thread';
import { CallLogWriter } from './writer';

/**
 * The call log's thread (call-log/thread.ts starts it): the writer, its spool and a database
 * connection of its own. Each finished call's COPY line, spool line and rollup share are made
 * here, and the inserts sent from here, off the event loop that serves requests.
 */
const port = parentPort;
if (!port) throw new Error('call-log/thread-worker runs as a worker thread only');
const data = workerData as ThreadData;

const send = (m: FromThread): void => port.postMessage(m);

/**
 * Lines go to the gateway's own logger, on the main thread. Fields cross as data: an error as the
 * logger would write it (name, message, code), and a field that cannot be cloned as its text, so
 * a log line can never stop the thread.
 */
function forwardingLogger(bindings: Record<string, unknown> = {}): Logger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (msg: string, fields?: Record<string, unknown>): void => {
      const plain: Record<string, unknown> = {};
      for (const [k, v] of Object.entries({ ...bindings, ...fields })) plain[k] = serializeError(v);
      try {
        send({ t: 'log', level, msg, fields: plain });
      } catch {
        const text = Object.fromEntries(Object.entries(plain).map(([k, v]) => [k, String(v)]));
        send({ t: 'log', level, msg, fields: text });
      }
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => forwardingLogger({ ...bindings, ...more }),
    flush: () => {},
  };
}

const logger = forwardingLogger();
// One connection: the writer sends one batch at a time. Connected on the first insert, so a
// database that is down when the gateway starts is an outage the writer rides out, as in-process.
const sql = connectOne(data.url, data.schema);
const spool = data.spool ? await Spool.open({ ...data.spool, logger }) : null;
const queries = callQueries(sql);
const writer = new CallLogWriter(
  {
    insertLines: (lines, rollups, opts) => queries.insertLines(lines, rollups, opts).finally(reportSoon),
    ping: () => queries.ping(),
  },
  { ...data.writer, spool, logger },
);
let received = 0;

const snapshot = (status = writer.status()) => ({
  status,
  pending: writer.pending,
  backlogSince: writer.backlogSince,
  received,
});

// The main thread reads status without asking (metrics, /readyz, tests). Nothing here follows
// the clock more than it must: a change of state (the spool full or failing, the database down,
// records lost) is sent as soon as the records that caused it are taken, the counts after each
// insert the writer tries, and both with each flush's answer; a slow tick catches what changes
// in between (the spool's own writes).
const STATE_TICK_MS = 1_000;
let sentState = '';
function report(always: boolean): void {
  const s = writer.status();
  const state = `${s.spoolFull}|${s.spoolError}|${s.databaseUp}|${s.dropped}|${s.rejected}|${s.segmentsOnDisk}`;
  if (state === sentState && !always) return;
  sentState = state;
  send({ t: 'status', ...snapshot(s) });
}
let reportQueued = false;
const reportSoon = () => {
  if (reportQueued) return;
  reportQueued = true;
  setImmediate(() => {
    reportQueued = false;
    report(true);
  });
};
const stateTick = setInterval(() => report(false), STATE_TICK_MS);
stateTick.unref();

port.on('message', (m: ToThread) => {
  switch (m.t) {
    case 'calls':
      for (const record of m.records as CallRecord[]) take(record);
      received += m.records.length;
      report(false);
      return;
    case 'flush':
    case 'settle':
    case 'close': {
      const work = m.t === 'close' ? close(m.timeoutMs) : m.t === 'flush' ? writer.flush() : writer.settle();
      void work.then(
        () => send({ t: 'done', id: m.id, ...snapshot() }),
        (err: unknown) => send({ t: 'done', id: m.id, ...snapshot(), error: String(err) }),
      );
      return;
    }
  }
});

/** A record the writer cannot take (a bug elsewhere) is logged and counted, and the thread goes on. */
function take(record: CallRecord): void {
  try {
    writer.enqueue(record);
  } catch (err) {
    writer.dropped++;
    logger.error('call log: a record could not be taken', { id: record?.id, error: err });
  }
}

async function close(timeoutMs: number): Promise<void> {
  clearInterval(stateTick);
  await writer.close(timeoutMs);
  await sql.end({ timeout: 5 });
}

send({ t: 'ready', ...snapshot() });
