import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallLogStatus } from '../src/call-log/writer';
import { startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

async function call(stack: Stack, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: `call ${i}` }],
      }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    ids.push(res.headers.get('keygate-request-id')!);
  }
  return ids;
}

async function recordedIds(stack: Stack, expected: number): Promise<string[]> {
  const rows = await waitFor(
    async () => {
      const all = await stack.calls();
      return all.length >= expected && all;
    },
    { timeout: 10_000, interval: 50, what: `${expected} call rows` },
  ).catch(() => stack.calls());
  return rows.map((r) => r.id);
}

/** Samples the writer's status while `work` runs. */
/**
 * Samples the writer's status while `work` runs, and after it until `until` holds (at most 5 s):
 * the spool writes once per group-commit interval, so its state can change after the last answer.
 */
async function watching<T>(
  stack: Stack,
  work: () => Promise<T>,
  until: (seen: CallLogStatus[]) => boolean = () => true,
): Promise<{ result: T; seen: CallLogStatus[] }> {
  const seen: CallLogStatus[] = [];
  const timer = setInterval(() => seen.push(stack.gateway.writer.status()), 5);
  try {
    const result = await work();
    await waitFor(() => until(seen), { timeout: 5_000, interval: 20 }).catch(() => {});
    return { result, seen };
  } finally {
    clearInterval(timer);
  }
}

describe('spool full (KEYGATE_SPOOL_MAX_BYTES)', () => {
  it('keeps serving, says so loudly, and writes every record to PostgreSQL from memory, through an outage too', async () => {
    const stack = await startStack({ KEYGATE_SPOOL_MAX_BYTES: '3000' });
    const sql = stack.gateway.store.db.sql;
    try {
      await sql`alter table calls rename to calls_offline`;
      // The calls reach the thread in batches after their answers: the state is waited for, not assumed.
      const { result: ids, seen } = await watching(
        stack,
        () => call(stack, 20),
        (s) => s.some((x) => x.spoolFull) && !stack.gateway.writer.status().databaseUp,
      );
      expect(seen.some((s) => s.spoolFull)).toBe(true);
      expect(stack.gateway.writer.status()).toMatchObject({ spoolFull: true, databaseUp: false, dropped: 0 });
      expect(stack.gateway.writer.status().spoolBytes).toBeLessThanOrEqual(3000);
      expect(stack.logs.filter((l) => l.includes('call spool full'))).toHaveLength(1);
      await sql`alter table calls_offline rename to calls`;
      expect((await recordedIds(stack, 20)).sort()).toEqual([...ids].sort());
      // Room again once PostgreSQL took the spooled records: the next record is spooled.
      // The call log's thread reports its state as it takes each record, not within the answer.
      await call(stack, 1);
      await waitFor(() => !stack.gateway.writer.status().spoolFull, {
        timeout: 2_000,
        what: 'the spool taking records again',
      });
      expect(stack.logs.some((l) => l.includes('call spool has room again'))).toBe(true);
    } finally {
      await stack.close();
    }
  });
});

describe('disk full for the spool (a 1 MB tmpfs)', () => {
  let mount: string;
  beforeAll(() => {
    if (process.getuid?.() !== 0)
      throw new Error('this test mounts a tmpfs: run it as root (CI and the dev machines do)');
    mount = mkdtempSync(join(tmpdir(), 'keygate-tmpfs-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount]);
  });
  afterAll(() => {
    if (!mount) return;
    execFileSync('umount', [mount]);
    rmSync(mount, { recursive: true, force: true });
  });

  it('ENOSPC: keeps serving, records reach PostgreSQL from memory, and spooling resumes when space returns', async () => {
    const spoolDir = join(mount, 'spool');
    const stack = await startStack({ KEYGATE_SPOOL_DIR: spoolDir });
    const filler = join(mount, 'filler');
    try {
      const { bavail, bsize } = statfsSync(mount);
      writeFileSync(filler, Buffer.alloc(Number(bavail) * Number(bsize)));
      const { result: ids, seen } = await watching(
        stack,
        () => call(stack, 15),
        (seen) => seen.some((s) => s.spoolError === 'ENOSPC'),
      );
      expect(seen.some((s) => s.spoolError === 'ENOSPC')).toBe(true);
      expect(stack.logs.some((l) => l.includes('call spool write failed') && l.includes('ENOSPC'))).toBe(
        true,
      );
      expect((await recordedIds(stack, 15)).sort()).toEqual([...ids].sort());
      expect(stack.gateway.writer.status().dropped).toBe(0);

      rmSync(filler);
      await new Promise((r) => setTimeout(r, 1100));
      // With PostgreSQL refusing, records stay in the spool: on disk again once there is room.
      const sql = stack.gateway.store.db.sql;
      await sql`alter table calls rename to calls_offline`;
      const later = await call(stack, 3);
      await waitFor(() => readdirSync(spoolDir).some((f) => f.endsWith('.tsv')), {
        timeout: 2_000,
        what: 'a spool segment on disk again',
      });
      await waitFor(() => stack.gateway.writer.status().spoolError === null, {
        timeout: 2_000,
        what: 'the spool error cleared',
      });
      await sql`alter table calls_offline rename to calls`;
      expect((await recordedIds(stack, 18)).sort()).toEqual([...ids, ...later].sort());
    } finally {
      await stack.close();
      rmSync(filler, { force: true });
    }
  });
});
