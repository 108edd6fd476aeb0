import { makeTestPdf } from '@keygate/pdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizePdf, type SummarizeProgress } from '../src/index';
import { clientFor, startStack, type Stack } from './helpers';

describe("@keygate/sdk's summarizePdf in Files and Batches modes, through the gateway", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  const client = () => clientFor(stack, { maxRetries: 0 });

  it('files mode: each part uploaded once and referred to by id, the uploads removed, progress told', async () => {
    const progress: SummarizeProgress[] = [];
    const bytes = await makeTestPdf({ pages: 25 });
    const before = stack.emulator.ledger.entries.length;
    const out = await summarizePdf(client(), bytes, {
      model: 'claude-haiku-4-5',
      maxPages: 10,
      mode: 'files',
      onProgress: (p) => progress.push(p),
    });
    expect(out.strategy).toBe('map_reduce');
    expect(out.chunks.map((c) => [c.fromPage, c.toPage])).toEqual([
      [1, 10],
      [11, 20],
      [21, 25],
    ]);
    expect(progress.filter((p) => p.stage === 'upload').map((p) => p.done)).toEqual([1, 2, 3]);
    expect(progress.filter((p) => p.stage === 'summarize')).toHaveLength(3);
    expect(progress.at(-1)).toEqual({ stage: 'done', done: 1, total: 1 });
    // The part requests carried file references, not bytes; the files are gone afterwards.
    const parts = stack.emulator.ledger.entries.slice(before).filter((e) => e.endpoint === 'messages');
    expect(parts).toHaveLength(4);
    expect(stack.emulator.surface.files.files.size).toBe(0);
    const uploads = (await stack.calls()).filter(
      (c) => c.endpoint === 'POST /v1/files' && c.key_id === stack.keyId,
    );
    expect(uploads).toHaveLength(3);
  });

  it('batch mode: the first pass as one batch at the batch price, then the summary of summaries', async () => {
    const progress: SummarizeProgress[] = [];
    const bytes = await makeTestPdf({ pages: 25 });
    const out = await summarizePdf(client(), bytes, {
      model: 'claude-haiku-4-5',
      maxPages: 10,
      mode: 'batch',
      batchPollMs: 200,
      onProgress: (p) => progress.push(p),
    });
    expect(out.chunks).toHaveLength(3);
    expect(out.chunks.every((c) => c.summary.startsWith('Emulated reply'))).toBe(true);
    const batchId = progress.find((p) => p.stage === 'batch')!.batchId!;
    expect(progress.filter((p) => p.stage === 'batch').at(-1)).toEqual({
      stage: 'batch',
      done: 3,
      total: 3,
      batchId,
    });
    const entries = stack.emulator.ledger.entries.filter((e) => e.batchId === batchId);
    expect(entries.map((e) => e.customId).sort()).toEqual(['part-0', 'part-1', 'part-2']);
    expect(out.chunks.map((c) => c.messageId).sort()).toEqual(entries.map((e) => e.messageId).sort());
    // The gateway records the batch's results as calls of the batch endpoint, grouped by its id.
    const sql = stack.gateway.store.db.sql;
    for (let i = 0; i < 100; i++) {
      const [row] = await sql`select status from batches where id = ${batchId}`;
      if (row?.status === 'recorded') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const rows = (await stack.calls()).filter((c) => c.group_id === batchId);
    expect(rows.map((r) => r.endpoint)).toEqual(['messages.batch', 'messages.batch', 'messages.batch']);
  });
});
