import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../../..');
const LOGGER = join(import.meta.dirname, 'logger.ts');

/** Runs `body` in a child whose logger is the production one (stderr, asynchronous); collects stderr with arrival times. */
function child(
  body: string,
): Promise<{ code: number | null; chunks: { at: number; text: string }[]; exitedAt: number }> {
  const script = `import { createLogger } from ${JSON.stringify(LOGGER)};\nimport { writeSync } from 'node:fs';\nconst log = createLogger('info');\n${body}`;
  const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const chunks: { at: number; text: string }[] = [];
  proc.stderr.on('data', (d) => chunks.push({ at: Date.now(), text: String(d) }));
  return new Promise((resolve) =>
    proc.once('close', (code) => resolve({ code, chunks, exitedAt: Date.now() })),
  );
}

const lines = (chunks: { text: string }[]) =>
  chunks
    .map((c) => c.text)
    .join('')
    .split('\n')
    .filter(Boolean);

describe('the asynchronous stderr destination', () => {
  it('writes every line still held back when the process exits at once', async () => {
    const { code, chunks } = await child(
      `for (let i = 0; i < 500; i++) log.info('line', { i });\nprocess.exit(3);`,
    );
    expect(code).toBe(3);
    const got = lines(chunks).map((l) => JSON.parse(l) as { msg: string; i: number });
    expect(got.map((l) => l.i)).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });

  it('flush() writes held-back lines before it returns', async () => {
    const { chunks } = await child(`log.warn('held back');\nlog.flush();\nwriteSync(2, 'after flush\\n');`);
    const got = lines(chunks);
    expect(got).toHaveLength(2);
    expect(JSON.parse(got[0]!)).toMatchObject({ level: 'warn', msg: 'held back' });
    expect(got[1]).toBe('after flush');
  });

  it('a lone line reaches stderr within about 250 ms, while the process lives on', async () => {
    const { chunks, exitedAt } = await child(`log.warn('alone');\nsetTimeout(() => {}, 2_000);`);
    expect(lines(chunks)).toHaveLength(1);
    expect(exitedAt - chunks[0]!.at).toBeGreaterThan(1_000);
  });

  it('a stalled reader of stderr does not stall the process: lines wait in memory and all arrive once it reads again', async () => {
    const script = `import { createLogger } from ${JSON.stringify(LOGGER)};
const log = createLogger('info');
for (let i = 0; i < 2000; i++) {
  log.info('line ' + 'x'.repeat(400), { i });
  if (i % 100 === 0) await new Promise((r) => setImmediate(r));
}
process.stdout.write('done\\n');`;
    const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // 800 KB of lines against a reader that takes nothing: a synchronous write would block at the pipe's 64 KB.
    proc.stderr.pause();
    const done = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10_000);
      proc.stdout.once('data', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    let text = '';
    proc.stderr.on('data', (d) => (text += d));
    proc.stderr.resume();
    await new Promise((r) => proc.once('close', r));
    expect(done).toBe(true);
    expect(
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { i: number }).i),
    ).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });
});
