import { decodeBase64Strict, inspectPdf, makePaddedTestPdf, makeTestPdf, PDF_LIMITS } from '@keygate/pdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdf, summarizePdf } from '../src/index';
import { bodyRecorder, clientFor, groupRows, MODEL, startStack, summed, type Stack } from './helpers';

type Body = Record<string, any>;
const documentsOf = (body: Body): Array<{ source: { data: string } }> =>
  body.messages[0].content.filter((b: Body) => b.type === 'document');
const promptOf = (body: Body): string => body.messages[0].content.at(-1).text;

describe('summarizePdf through the gateway: a 250-page PDF', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it('sent whole, the gateway refuses it and points to summarizePdf()', async () => {
    const bytes = await makeTestPdf({ pages: 250 });
    const client = clientFor(stack, { maxRetries: 0 });
    const content = [pdf.documentBlock(bytes), { type: 'text' as const, text: 'Summarize.' }];
    await expect(
      client.messages.create({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content }] }),
    ).rejects.toThrow(/250 pages; the limit is 100 pages[\s\S]*summarizePdf\(\)/);
  });

  it('is split into chunks the gateway accepts, and the reduce step sees every chunk summary', async () => {
    const bytes = await makeTestPdf({
      pages: 250,
      text: (n) => `Section ${Math.ceil(n / 25)}, page ${n}: quarterly figures.`,
    });
    const recorder = bodyRecorder();
    const client = clientFor(stack, { middleware: [recorder.middleware] });
    const out = await summarizePdf(client, bytes, {
      model: MODEL,
      instruction: 'Summarize the quarterly figures.',
      format: 'bullets',
      title: 'Annual report',
      concurrency: 2,
    });

    expect(out.strategy).toBe('map_reduce');
    expect(out.pages).toBe(250);
    expect(out.chunks.map((c) => [c.fromPage, c.toPage])).toEqual([
      [1, 100],
      [101, 200],
      [201, 250],
    ]);

    // Each chunk request: one document within the provider's limits, accepted by the gateway.
    const chunkBodies = recorder.bodies.filter((b) => documentsOf(b).length > 0);
    expect(chunkBodies).toHaveLength(3);
    for (const body of chunkBodies) {
      const [doc] = documentsOf(body);
      const info = inspectPdf(decodeBase64Strict(doc!.source.data)!);
      expect(info.pages).toBeLessThanOrEqual(PDF_LIMITS.maxPages);
      expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(PDF_LIMITS.maxRequestBytes);
    }
    const rows = await groupRows(stack, out.groupId);
    expect(rows).toHaveLength(4);
    expect(rows.map((r) => [r.status, r.error_type])).toEqual(Array(4).fill([200, null]));

    // The provider read each chunk's pages (the emulator bills 1,600 tokens a page).
    for (const chunk of out.chunks) {
      const entry = stack.emulator.ledger.find(chunk.messageId)!;
      expect(entry.status).toBe(200);
      expect(entry.usage!.input_tokens).toBeGreaterThanOrEqual(chunk.pages * 1_600);
    }

    // The reduce request is text only and carries every chunk's summary.
    const reduce = recorder.bodies.at(-1)!;
    expect(documentsOf(reduce)).toEqual([]);
    for (const chunk of out.chunks) {
      expect(chunk.summary).toMatch(new RegExp(`Pages ${chunk.fromPage}–${chunk.toPage}`));
      expect(promptOf(reduce)).toContain(chunk.summary);
    }
    expect(stack.emulator.ledger.find(out.message.id)!.status).toBe(200);
    expect(out.result).toBe(out.message.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
    expect(out.usage).toMatchObject(summed(rows));
  });

  it('a scanned (image-only) PDF goes the same way', async () => {
    const bytes = await makeTestPdf({ pages: 120, imageOnly: true });
    const client = clientFor(stack);
    const out = await summarizePdf(client, bytes, {
      model: MODEL,
      instruction: 'Describe the scanned pages.',
    });
    expect(out.chunks.map((c) => c.pages)).toEqual([100, 20]);
    expect((await groupRows(stack, out.groupId)).every((r) => r.status === 200)).toBe(true);
  });
});

describe('summarizePdf: chunks also fit by size', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ KEYGATE_MAX_BODY_BYTES: String(2 * 1024 * 1024) });
  });
  afterAll(() => stack?.close());

  it('a 3 MB PDF against a 2 MB request limit: every chunk request passes the gateway', async () => {
    const bytes = await makePaddedTestPdf({ pages: 12, targetBytes: 3 * 1024 * 1024 });
    const client = clientFor(stack);
    const out = await summarizePdf(client, bytes, { model: MODEL, maxBytes: 1.5 * 1024 * 1024 });
    expect(out.strategy).toBe('map_reduce');
    expect(out.chunks.length).toBeGreaterThanOrEqual(3);
    expect(out.chunks.reduce((n, c) => n + c.pages, 0)).toBe(12);
    const rows = await groupRows(stack, out.groupId);
    expect(rows).toHaveLength(out.chunks.length + 1);
    expect(rows.every((r) => r.status === 200)).toBe(true);
  });
});
