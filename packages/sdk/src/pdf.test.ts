import { makeEncryptedTestPdf, makeTestPdf } from '@keygate/pdf';
import { describe, expect, it } from 'vitest';
import { pdf, PdfError } from './pdf';

describe('pdf helpers', () => {
  it('inspect: pages, sizes, and whether the document fits one request', async () => {
    const small = await makeTestPdf({ pages: 3 });
    const info = await pdf.inspect(small);
    expect(info).toMatchObject({
      isPdf: true,
      pages: 3,
      encrypted: false,
      bytes: small.length,
      base64Bytes: Math.ceil(small.length / 3) * 4,
      fits: true,
      problem: null,
    });
    expect(await pdf.inspect(small, { maxPages: 2 })).toMatchObject({
      fits: false,
      problem: { reason: 'too_many_pages', message: expect.stringMatching(/3 pages/) },
    });
    expect(
      await pdf.inspect(
        small.buffer.slice(small.byteOffset, small.byteOffset + small.byteLength) as ArrayBuffer,
      ),
    ).toMatchObject({ pages: 3 });
    expect(await pdf.inspect(makeEncryptedTestPdf())).toMatchObject({
      encrypted: true,
      fits: false,
      problem: { reason: 'encrypted' },
    });
    expect(await pdf.inspect(new TextEncoder().encode('hello'))).toMatchObject({ isPdf: false, fits: false });
  });

  it('documentBlock: a base64 document block with the options given', async () => {
    const bytes = await makeTestPdf({ pages: 1 });
    expect(
      pdf.documentBlock(bytes, {
        title: 'Report',
        context: 'Q3',
        citations: true,
        cacheControl: { type: 'ephemeral' },
      }),
    ).toEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: Buffer.from(bytes).toString('base64') },
      title: 'Report',
      context: 'Q3',
      citations: { enabled: true },
      cache_control: { type: 'ephemeral' },
    });
    expect(Object.keys(pdf.documentBlock(bytes))).toEqual(['type', 'source']);
  });

  it('documentBlock refuses what the provider would refuse', () => {
    expect(() => pdf.documentBlock(new TextEncoder().encode('not a pdf'))).toThrow(
      expect.objectContaining({ code: 'invalid_pdf' }),
    );
    expect(() => pdf.documentBlock(makeEncryptedTestPdf())).toThrow(PdfError);
  });

  it('split: page ranges within the page limit that cover the document in order', async () => {
    const chunks = await pdf.split(await makeTestPdf({ pages: 25 }), { maxPages: 10 });
    expect(chunks.map((c) => [c.fromPage, c.toPage, c.pages])).toEqual([
      [1, 10, 10],
      [11, 20, 10],
      [21, 25, 5],
    ]);
    for (const chunk of chunks) expect((await pdf.inspect(chunk.bytes)).pages).toBe(chunk.pages);
  });
});
