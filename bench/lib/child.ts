/** What a benchmark arm runs in its own process: tells the parent where it listens, and stops when told. */
export interface ArmProcess {
  info: Record<string, unknown>;
  /** Returns figures the parent reports (records written, …). */
  close(): Promise<Record<string, unknown> | void>;
  /** Finishes the work calls left for later (the call log's spool and batch), on the parent's `settle`. */
  settle?(): Promise<void>;
}

export type ArmMessage =
  | { type: 'ready'; info: Record<string, unknown> }
  | { type: 'closed'; stats: Record<string, unknown> }
  | { type: 'collected'; heapMb: number }
  | { type: 'settled' };

/** Starts an arm and serves the parent's `close`; exits when the parent goes away. */
export async function serveArm(start: () => Promise<ArmProcess>): Promise<void> {
  if (!process.send) throw new Error('run as a child process of bench/run.ts');
  const arm = await start();
  const allocations = process.env.BENCH_ALLOC_PROF
    ? await sampleAllocations(process.env.BENCH_ALLOC_PROF)
    : null;
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (allocations ? allocations() : Promise.resolve())
      .then(() => arm.close())
      .then((stats) => send({ type: 'closed', stats: stats ?? {} }))
      .catch((err) => send({ type: 'closed', stats: { error: String(err) } }))
      .finally(() => process.exit(0)));
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'close') void close();
    if (m?.type === 'settle')
      void (arm.settle?.() ?? Promise.resolve()).then(() => send({ type: 'settled' }));
    if (m?.type === 'gc') {
      (globalThis as { gc?: () => void }).gc?.();
      void send({ type: 'collected', heapMb: process.memoryUsage().heapUsed / 2 ** 20 });
    }
  });
  process.on('disconnect', () => void close());
  process.on('SIGTERM', () => void close());
  send({ type: 'ready', info: arm.info });
}

function send(message: ArmMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, {}, () => resolve());
  });
}

/**
 * Samples every allocation from now on, the ones the garbage collector took back included
 * (what `--heap-prof` leaves out), and writes the `.heapprofile` to `file` when the returned
 * function is called: where a call's bytes are allocated (bench/profile.ts, PROFILE_HEAP=1).
 */
async function sampleAllocations(file: string): Promise<() => Promise<void>> {
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return async () => {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}
