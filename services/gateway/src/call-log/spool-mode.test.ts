import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { waitFor } from '../../test/kit/wait';
import { silentLogger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { Spool } from './spool';
import { CallLogWriter } from './writer';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'keygate-spool-mode-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const mode = (path: string) => statSync(path).mode & 0o777;

it('keeps call records to this user: the folder 0700, the lock and every segment 0600', async () => {
  // A folder left world-readable (an older version, or a careless mkdir) is closed on start.
  const dir = join(root, 'spool');
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'calls-000000000001.jsonl'), '', { mode: 0o644 });
  chmodSync(join(dir, 'calls-000000000001.jsonl'), 0o644);
  const spool = await Spool.open({ dir, maxBytes: 1 << 20, syncMs: 5, logger: silentLogger });
  const sink = {
    ids: [] as string[],
    insertLines: async () => new Promise<void>(() => {}),
    ping: async () => {},
  };
  const w = new CallLogWriter(sink, { flushIntervalMs: 60_000, spool, logger: silentLogger });
  w.enqueue({ id: 'req_1', accountId: 'acct_1', endpoint: 'messages', createdAt: new Date() } as CallRecord);
  // The earlier version's segment and the one this record opened.
  const segments = () => readdirSync(dir).filter((f) => /\.(tsv|jsonl)$/.test(f));
  await waitFor(() => segments().length === 2, { timeout: 5_000, interval: 5, what: 'the new segment' });
  expect(mode(dir)).toBe(0o700);
  const files = readdirSync(dir);
  expect(segments()).toEqual(['calls-000000000001.jsonl', 'calls-000000000002.tsv']);
  for (const f of files) expect([f, mode(join(dir, f))]).toEqual([f, 0o600]);
  await spool.close();
});
