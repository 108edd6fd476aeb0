import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { CallRecord } from '../lib/call-record';
import type { Logger } from '../lib/logger';
import type { SpoolOptions } from './spool';
import type { CallLogStatus, WriterOptions } from './writer';

/** What the gateway asks of its call log, in-process (CallLogWriter) or on its thread (CallLogThread). */
export interface CallLog {
  enqueue(record: CallRecord): void;
  /** Writes everything waiting now. */
  flush(): Promise<void>;
  /** Makes the spool's buffered lines durable, then writes everything waiting. */
  settle(): Promise<void>;
  close(timeoutMs?: number): Promise<void>;
  status(): CallLogStatus;
  readonly pending: number;
  readonly backlogSince: number | null;
  readonly dropped: number;
  readonly databaseErrors: number;
}

/** What the thread is started with (structured-cloned: data only). */
export interface ThreadData {
  url: string;
  schema?: string;
  spool: Omit<SpoolOptions, 'logger'> | null;
  writer: Omit<WriterOptions, 'spool' | 'logger'>;
}

export type ToThread =
  | { t: 'calls'; records: CallRecord[] }
  | { t: 'flush' | 'settle'; id: number }
  | { t: 'close'; id: number; timeoutMs: number };

interface Snapshot {
  status: CallLogStatus;
  pending: number;
  backlogSince: number | null;
  /** Records the thread has taken so far. */
  received: number;
}

export type FromThread =
  | ({ t: 'ready' | 'status' } & Snapshot)
  | ({ t: 'done'; id: number; error?: string } & Snapshot)
  | {
      t: 'log';
      level: 'debug' | 'info' | 'warn' | 'error';
      msg: string;
      fields: Record<string, unknown>;
    };

/**
 * The thread's code is the compiled build's (dist/call-log/thread-worker.js): Node 20 cannot load
 * TypeScript in a worker, so the gateway run from its sources (the tests) builds first,
 * as `bin/keygate.js` does, and uses the same file the compiled gateway does.
 */
async function workerFile(): Promise<URL> {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new URL('../call-log/thread-worker.js', here);
  const build = new URL('../../scripts/build.mjs', here).href;
  const { ensureBuilt } = (await import(/* @vite-ignore */ build)) as { ensureBuilt(): Promise<void> };
  await ensureBuilt();
  return new URL('../../dist/call-log/thread-worker.js', here);
}

/** Starts a thread on the worker code (tests wrap it, to stop a thread as a crash would). */
export type Spawn = (file: URL, data: ThreadData) => Worker;

// The thread's young generation is kept small: what it allocates per call (the record as it
// arrives, its lines) dies young, and at the default size its heap added up to 17 MB to the
// gateway's RSS under load. At 4 MB, RSS under load matched the call log in-process, and
// throughput did not drop (bench/RESULTS.md, sixth round).
const YOUNG_GENERATION_MB = 4;

const spawnWorker: Spawn = (file, data) =>
  new Worker(file, {
    workerData: data,
    name: 'keygate call log',
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });

/** Resolves with the thread's first status once its spool is open; rejects if it fails before. */
function ready(worker: Worker, logger: Logger): Promise<Snapshot> {
  return new Promise<Snapshot>((resolve, reject) => {
    const done = () => {
      worker.off('message', onMessage);
      worker.off('error', reject);
      worker.off('exit', onExit);
    };
    const onMessage = (m: FromThread) => {
      if (m.t === 'log') return forward(logger, m);
      if (m.t !== 'ready') return;
      done();
      resolve(m);
    };
    const onExit = (code: number) => {
      done();
      reject(new Error(`the call log's thread exited (${code}) before it was ready`));
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    worker.once('exit', onExit);
  });
}

/**
 * How long a finished call waits to be handed to the thread with the calls that end after it
 * (KEYGATE_CALL_LOG_HANDOVER_MS), and how many calls go at once without waiting. Each hand-over
 * wakes the thread, and a wake-up from one core to another costs the serving thread more than the
 * record's clone: handed over once per turn of the event loop (one call per turn at low load), the
 * call log added 0.07 ms to the median at one connection on a 2-core VM; every 10 ms, next to
 * nothing (bench/RESULTS.md, ninth round). The wait adds at most this long to the time a call
 * takes to reach the spool.
 */
export const HAND_OVER_MS = 10;
const HAND_OVER_MAX = 64;

/** A thread that stopped is started again after this long, doubling while it keeps stopping. */
const RESTART_MS = 100;
const RESTART_CAP_MS = 30_000;

/**
 * The call log on a thread of its own. The request path hands each finished call over (one
 * message per turn of the event loop, however many calls ended in it); the thread makes the
 * COPY line, the spool line and the rollup share and sends the inserts, off the event loop
 * that serves requests (bench/RESULTS.md, sixth round). Status is what the thread last
 * reported (a change of state at once, counts after each insert it tries, and with each flush), plus what is
 * on its way to it. A thread that stops (a bug, not an outage: the writer rides those out) is
 * started again on the same spool, which replays what it had made durable.
 */
export class CallLogThread implements CallLog {
  readonly #file: URL;
  readonly #data: ThreadData;
  readonly #spawn: Spawn;
  readonly #logger: Logger;
  /** Null while a stopped thread is being started again. */
  #worker: Worker | null = null;
  #batch: CallRecord[] = [];
  readonly #handOverMs: number;
  #handOverTimer: NodeJS.Timeout | null = null;
  /** Records handed to the current thread. */
  #sent = 0;
  #last: Snapshot;
  /** When the first call of the batch waiting here ended. */
  #batchSince = 0;
  /**
   * Hand-overs the thread has not yet reported taking: the count sent up to and including each,
   * and when its first call ended. What waits here or on its way is the main side's backlog.
   */
  #unconfirmed: { upTo: number; since: number }[] = [];
  #nextId = 1;
  readonly #waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  #restarts = 0;
  /** Records handed to a thread that stopped before it took them, or that could not be handed over. */
  #lostCount = 0;
  #restarting: Promise<void> | null = null;
  #closing: Promise<void> | null = null;
  /** Set once close() ends the thread: its exit is not a stop to recover from. */
  #terminating = false;

  private constructor(
    file: URL,
    data: ThreadData,
    spawn: Spawn,
    logger: Logger,
    worker: Worker,
    first: Snapshot,
    handOverMs: number,
  ) {
    this.#handOverMs = handOverMs;
    this.#file = file;
    this.#data = data;
    this.#spawn = spawn;
    this.#logger = logger;
    this.#last = first;
    this.#attach(worker);
  }

  /** Starts the thread; resolves once its spool is open (segments left by an earlier run are replayed). */
  static async start(
    data: ThreadData,
    logger: Logger,
    spawn: Spawn = spawnWorker,
    handOverMs = HAND_OVER_MS,
  ): Promise<CallLogThread> {
    const file = await workerFile();
    if (!existsSync(file)) throw new Error(`the call log's thread code is missing: ${file.pathname}`);
    const worker = spawn(file, data);
    return new CallLogThread(file, data, spawn, logger, worker, await ready(worker, logger), handOverMs);
  }

  #attach(worker: Worker): void {
    this.#worker = worker;
    this.#sent = 0;
    worker.on('message', (m: FromThread) => this.#onMessage(m));
    worker.on('error', (err) => this.#stopped(worker, err));
    worker.on('exit', (code) => this.#stopped(worker, new Error(`the call log's thread exited (${code})`)));
  }

  #stopped(worker: Worker, err: Error): void {
    if (worker !== this.#worker || this.#terminating) return;
    this.#worker = null;
    const unconfirmed = this.#inFlight();
    this.#lostCount += unconfirmed;
    this.#last = { ...this.#last, received: 0 };
    this.#sent = 0;
    this.#unconfirmed = [];
    // Records it took but had not reported are counted too: an upper bound of what is lost.
    this.#logger.error(
      'call log: its thread stopped; starting it again (what it had spooled is replayed, records it had not taken are lost)',
      { error: err, unconfirmed },
    );
    for (const w of this.#waiting.values()) w.reject(err);
    this.#waiting.clear();
    const delay = Math.min(RESTART_MS * 2 ** this.#restarts++, RESTART_CAP_MS);
    this.#restarting = new Promise<void>((r) => setTimeout(r, delay)).then(() => this.#restart());
  }

  async #restart(): Promise<void> {
    const worker = this.#spawn(this.#file, this.#data);
    let first: Snapshot;
    try {
      first = await ready(worker, this.#logger);
    } catch (err) {
      // Stopped again before it was running: the next try waits longer.
      this.#worker = worker;
      return this.#stopped(worker, err as Error);
    }
    if (this.#closing) {
      // The gateway began to stop meanwhile; close() found no thread to ask.
      this.#terminating = true;
      await worker.terminate();
      return;
    }
    this.#restarting = null;
    this.#last = first;
    this.#attach(worker);
    this.#logger.warn('call log: its thread is running again', { restarts: this.#restarts });
    this.#post();
  }

  enqueue(record: CallRecord): void {
    const waiting = this.#batch.push(record);
    if (waiting === 1) {
      this.#batchSince = Date.now();
      this.#armHandOver();
    } else if (waiting >= HAND_OVER_MAX) this.#post();
  }

  /** The first call of a batch: the batch goes to the thread `handOverMs` later, with the calls ending meanwhile. */
  #armHandOver(): void {
    if (this.#handOverMs === 0) {
      setImmediate(this.#post);
      return;
    }
    // One timer, re-armed per batch (a timer per batch would be a new object each time).
    if (this.#handOverTimer) this.#handOverTimer.refresh();
    else {
      this.#handOverTimer = setTimeout(this.#post, this.#handOverMs);
      this.#handOverTimer.unref();
    }
  }

  readonly #post = (): void => {
    const records = this.#batch;
    // While a stopped thread is started again, records wait here; it posts them once running.
    if (records.length === 0 || !this.#worker) return;
    this.#batch = [];
    const sentBefore = this.#sent;
    this.#send(records);
    if (this.#sent > sentBefore) this.#unconfirmed.push({ upTo: this.#sent, since: this.#batchSince });
  };

  /** Posts the records; one the clone refuses is counted and logged, and the rest still go. */
  #send(records: CallRecord[]): void {
    // A record that cannot be cloned (a bug where it is made) must not take the others with it,
    // nor throw on the request path: the rest go one by one, and that one is counted and logged.
    if (this.#handOver(records) === null) return;
    for (const record of records) {
      const refused = this.#handOver([record]);
      if (refused === null) continue;
      this.#lostCount++;
      this.#logger.error('call log: a record could not be handed to its thread', {
        id: record.id,
        error: refused,
      });
    }
  }

  /** Null once the thread has the records; what the clone threw when it refused them. */
  #handOver(records: CallRecord[]): unknown {
    try {
      this.#worker!.postMessage({ t: 'calls', records } satisfies ToThread);
      this.#sent += records.length;
      return null;
    } catch (err) {
      return err;
    }
  }

  flush(): Promise<void> {
    return this.#ask('flush');
  }

  settle(): Promise<void> {
    return this.#ask('settle');
  }

  close(timeoutMs = 5_000): Promise<void> {
    this.#closing ??= (async () => {
      try {
        if (this.#worker) await this.#ask('close', timeoutMs);
        else
          this.#logger.error("call records lost at shutdown: the call log's thread was not running", {
            count: this.#batch.length,
          });
      } finally {
        if (this.#handOverTimer) clearTimeout(this.#handOverTimer);
        this.#terminating = true;
        await this.#worker?.terminate();
      }
    })();
    return this.#closing;
  }

  async #ask(t: 'flush' | 'settle' | 'close', timeoutMs = 0): Promise<void> {
    while (!this.#worker) {
      if (!this.#restarting) throw new Error("the call log's thread is not running");
      await this.#restarting;
    }
    this.#post();
    const id = this.#nextId++;
    const done = new Promise<void>((resolve, reject) => this.#waiting.set(id, { resolve, reject }));
    this.#worker.postMessage((t === 'close' ? { t, id, timeoutMs } : { t, id }) satisfies ToThread);
    return done;
  }

  #onMessage(m: FromThread): void {
    if (m.t === 'log') return forward(this.#logger, m);
    this.#last = m;
    const taken = this.#last.received;
    while (this.#unconfirmed.length > 0 && this.#unconfirmed[0]!.upTo <= taken) this.#unconfirmed.shift();
    if (m.t !== 'done') return;
    const waiter = this.#waiting.get(m.id);
    this.#waiting.delete(m.id);
    if (!waiter) return;
    if (m.error) waiter.reject(new Error(m.error));
    else waiter.resolve();
  }

  /** Records handed to the thread that it has not taken yet. */
  #inFlight(): number {
    return this.#sent - this.#last.received;
  }

  get pending(): number {
    return this.#last.pending + this.#inFlight() + this.#batch.length;
  }

  get backlogSince(): number | null {
    // The oldest of: what the thread holds, what is on its way to it, what waits to be handed over.
    const ours = this.#unconfirmed[0]?.since ?? (this.#batch.length > 0 ? this.#batchSince : null);
    const theirs = this.#last.backlogSince;
    if (theirs === null) return ours;
    return ours === null ? theirs : Math.min(theirs, ours);
  }

  get dropped(): number {
    return this.#last.status.dropped + this.#lostCount;
  }

  get databaseErrors(): number {
    return this.#last.status.databaseErrors;
  }

  status(): CallLogStatus {
    const s = this.#last.status;
    return { ...s, queued: s.queued + this.#inFlight() + this.#batch.length, dropped: this.dropped };
  }
}

function forward(logger: Logger, m: Extract<FromThread, { t: 'log' }>): void {
  logger[m.level](m.msg, m.fields);
}
