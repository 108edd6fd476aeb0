/** What a benchmark arm runs in its own process: tells the parent where it listens, and stops when told. */
export interface ArmProcess {
  info: Record<string, unknown>;
  /** Returns figures the parent reports (records written, …). */
  close(): Promise<Record<string, unknown> | void>;
}

export type ArmMessage =
  | { type: 'ready'; info: Record<string, unknown> }
  | { type: 'closed'; stats: Record<string, unknown> }
  | { type: 'collected'; heapMb: number };

/** Starts an arm and serves the parent's `close`; exits when the parent goes away. */
export async function serveArm(start: () => Promise<ArmProcess>): Promise<void> {
  if (!process.send) throw new Error('run as a child process of bench/run.ts');
  const arm = await start();
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= arm
      .close()
      .then((stats) => send({ type: 'closed', stats: stats ?? {} }))
      .catch((err) => send({ type: 'closed', stats: { error: String(err) } }))
      .finally(() => process.exit(0)));
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'close') void close();
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
