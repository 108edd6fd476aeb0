import { PDFDocument } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import { base64Length } from './base64';
import { PdfError } from './errors';
import { makeEncryptedTestPdf, makePaddedTestPdf, makeTestPdf } from './fixtures';
import { inspectPdf } from './inspect';
import { splitPdf, type PdfChunk } from './split';
import { pageContents, shownTexts } from './test-support';

async function sourcePagesOf(chunks: PdfChunk[]): Promise<number[]> {
  const pages: number[] = [];
  for (const chunk of chunks) {
    const doc = await PDFDocument.load(chunk.bytes);
    for (const content of pageContents(doc)) pages.push(Number(shownTexts(content)[0]?.replace('Page ', '')));
  }
  return pages;
}

const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('splitPdf', () => {
  it('splits 250 pages into 100, 100 and 50, in order, each page once', async () => {
    const chunks = await splitPdf(await makeTestPdf({ pages: 250 }), { maxPages: 100 });
    expect(chunks.map(({ index, fromPage, toPage, pages }) => ({ index, fromPage, toPage, pages }))).toEqual([
      { index: 0, fromPage: 1, toPage: 100, pages: 100 },
      { index: 1, fromPage: 101, toPage: 200, pages: 100 },
      { index: 2, fromPage: 201, toPage: 250, pages: 50 },
    ]);
    for (const chunk of chunks) expect(inspectPdf(chunk.bytes).pages).toBe(chunk.pages);
    expect(await sourcePagesOf(chunks)).toEqual(oneTo(250));
  });

  it('keeps a document within the limits in one chunk by default', async () => {
    const chunks = await splitPdf(await makeTestPdf({ pages: 7, useObjectStreams: false }));
    expect(chunks.map(({ fromPage, toPage, pages }) => ({ fromPage, toPage, pages }))).toEqual([
      { fromPage: 1, toPage: 7, pages: 7 },
    ]);
  });

  it('halves chunks until each one is under maxBytes as base64', async () => {
    const maxBytes = 600_000;
    const chunks = await splitPdf(await makePaddedTestPdf({ pages: 20, targetBytes: 2_000_000 }), {
      maxBytes,
    });
    expect(chunks.length).toBeGreaterThan(3);
    for (const [i, chunk] of chunks.entries()) {
      expect(chunk.index).toBe(i);
      expect(base64Length(chunk.bytes.length)).toBeLessThanOrEqual(maxBytes);
      expect(chunk.pages).toBe(chunk.toPage - chunk.fromPage + 1);
      expect(chunk.fromPage).toBe(i === 0 ? 1 : (chunks[i - 1]?.toPage ?? 0) + 1);
      expect(inspectPdf(chunk.bytes).pages).toBe(chunk.pages);
    }
    expect(chunks.at(-1)?.toPage).toBe(20);
    expect(await sourcePagesOf(chunks)).toEqual(oneTo(20));
  });

  it('applies maxPages and maxBytes together', async () => {
    const chunks = await splitPdf(await makePaddedTestPdf({ pages: 9, targetBytes: 900_000 }), {
      maxPages: 4,
      maxBytes: 400_000,
    });
    for (const chunk of chunks) {
      expect(chunk.pages).toBeLessThanOrEqual(4);
      expect(base64Length(chunk.bytes.length)).toBeLessThanOrEqual(400_000);
    }
    expect(await sourcePagesOf(chunks)).toEqual(oneTo(9));
  });

  it('names the page when one page alone is over maxBytes', async () => {
    const pdf = await makePaddedTestPdf({ pages: 3, targetBytes: 300_000 });
    const error = await splitPdf(pdf, { maxBytes: 50_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PdfError);
    expect(error).toMatchObject({
      code: 'page_too_large',
      message: expect.stringMatching(/^Page 1 alone takes \d+ bytes/),
    });
  });

  it('refuses an encrypted PDF', async () => {
    await expect(splitPdf(makeEncryptedTestPdf())).rejects.toMatchObject({
      name: 'PdfError',
      code: 'encrypted',
    });
  });

  it('refuses what is not a PDF', async () => {
    await expect(splitPdf(new Uint8Array(Buffer.from('not a pdf')))).rejects.toMatchObject({
      code: 'invalid_pdf',
    });
  });

  it('rejects options that cannot be met', async () => {
    const pdf = await makeTestPdf({ pages: 1 });
    await expect(splitPdf(pdf, { maxPages: 0 })).rejects.toThrow(RangeError);
    await expect(splitPdf(pdf, { maxPages: 1.5 })).rejects.toThrow(RangeError);
    await expect(splitPdf(pdf, { maxBytes: 0 })).rejects.toThrow(RangeError);
  });
});
