import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import { makeEncryptedTestPdf, makeTestPdf } from './fixtures';
import { assemblePdf, type PdfObjectSource } from './hand-built-pdf';
import { inspectPdf, inspectPdfFully } from './inspect';

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes).toString('latin1');
const fromLatin1 = (text: string) => new Uint8Array(Buffer.from(text, 'latin1'));
const breakStartxref = (pdf: Uint8Array) =>
  fromLatin1(latin1(pdf).replace(/startxref\s+\d+/, 'startxref\n12'));
const pdfLibPageCount = async (pdf: Uint8Array) =>
  (await PDFDocument.load(pdf, { ignoreEncryption: true })).getPageCount();

const PAGE = '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>';
const CATALOG: PdfObjectSource = [1, '<< /Type /Catalog /Pages 2 0 R >>'];

/** Object `num`, a stream holding `objects`, plus object `lengthIn` for its /Length when given. */
function objectStream(
  num: number,
  objects: PdfObjectSource[],
  opts: { deflate?: boolean; length?: number; lengthIn?: number } = {},
): PdfObjectSource[] {
  let offsets = '';
  let bodies = '';
  for (const [objectNum, body] of objects) {
    offsets += `${objectNum} ${bodies.length} `;
    bodies += `${body}\n`;
  }
  const plain = Buffer.from(offsets + bodies, 'latin1');
  const data = opts.deflate ? deflateSync(plain) : plain;
  const filter = opts.deflate ? '/Filter /FlateDecode ' : '';
  const length = opts.length ?? data.length;
  const dict = `<< /Type /ObjStm ${filter}/N ${objects.length} /First ${offsets.length} /Length ${opts.lengthIn === undefined ? length : `${opts.lengthIn} 0 R`} >>`;
  const stream: PdfObjectSource = [num, `${dict}\nstream\n${data.toString('latin1')}\nendstream`];
  return opts.lengthIn === undefined ? [stream] : [stream, [opts.lengthIn, String(length)]];
}

describe('inspectPdf page counts', () => {
  it.each(
    [false, true].flatMap((useObjectStreams) =>
      [1, 7, 100, 250].map((pages) => ({ pages, useObjectStreams })),
    ),
  )('reads $pages pages (object streams: $useObjectStreams)', async ({ pages, useObjectStreams }) => {
    const pdf = await makeTestPdf({ pages, useObjectStreams });
    expect(inspectPdf(pdf)).toEqual({
      isPdf: true,
      pages,
      encrypted: false,
      bytes: pdf.length,
      version: '1.7',
    });
  });

  it('counts the pages of an image-only PDF', async () => {
    expect(inspectPdf(await makeTestPdf({ pages: 3, imageOnly: true })).pages).toBe(3);
  });

  it('reads only top-level keys, in compact syntax with comments', () => {
    const pdf = assemblePdf(
      [
        [
          1,
          '<</Type/Catalog/Names<</Dests<</Pages 9 0 R>>/Pages 9 0 R>>%a comment /Pages 9 0 R\n/Pages 2 0 R>>',
        ],
        [2, '<</Type/Pages/Resources<</Count 40>>/Kids[3 0 R 4 0 R]/Count 2>>'],
        [3, PAGE],
        [4, PAGE],
        [9, '<< /Type /Pages /Kids [] /Count 0 >>'],
      ],
      '/Root 1 0 R',
    );
    expect(inspectPdf(pdf).pages).toBe(2);
  });

  it('does not mistake object 12 for object 2', () => {
    const pdf = assemblePdf(
      [
        CATALOG,
        [2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>'],
        [3, PAGE],
        [12, '<< /Type /Pages /Kids [] /Count 99 >>'],
      ],
      '/Root 1 0 R',
    );
    expect(inspectPdf(pdf).pages).toBe(1);
  });

  it('finds the trailer by its keyword when startxref points nowhere useful', async () => {
    const broken = breakStartxref(await makeTestPdf({ pages: 7, useObjectStreams: false }));
    expect(inspectPdf(broken).pages).toBe(7);
  });

  it('finds a header after leading junk', async () => {
    const pdf = await makeTestPdf({ pages: 3, useObjectStreams: false });
    const prefixed = new Uint8Array(Buffer.concat([Buffer.from('junk before the header\n'), pdf]));
    expect(inspectPdf(prefixed)).toMatchObject({ isPdf: true, pages: 3, version: '1.7' });
  });

  it('reads a view into a larger buffer', async () => {
    const pdf = await makeTestPdf({ pages: 2 });
    const backing = new Uint8Array(pdf.length + 200).fill(0x41);
    backing.set(pdf, 100);
    expect(inspectPdf(backing.subarray(100, 100 + pdf.length))).toMatchObject({ isPdf: true, pages: 2 });
  });
});

describe('inspectPdf on incremental updates, agreeing with pdf-lib', () => {
  const onePage: PdfObjectSource = [2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>'];
  const twoPages: PdfObjectSource = [2, '<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>'];
  const base = assemblePdf([CATALOG, onePage, [3, PAGE]], '/Root 1 0 R');
  const compressed = assemblePdf([...objectStream(5, [CATALOG, onePage]), [3, PAGE]], '/Root 1 0 R');

  // Each update adds page 4 to a one-page PDF.
  it.each([
    {
      name: 'takes the latest uncompressed version of an object',
      prior: base,
      update: [twoPages, [4, PAGE]],
    },
    {
      name: 'takes a version in a later, compressed object stream whose /Length is indirect',
      prior: base,
      update: [[4, PAGE], ...objectStream(5, [twoPages], { deflate: true, lengthIn: 6 })],
    },
    {
      name: 'takes an uncompressed version written after an object stream',
      prior: compressed,
      update: [twoPages, [4, PAGE]],
    },
  ] as { name: string; prior: Uint8Array; update: PdfObjectSource[] }[])(
    '$name',
    async ({ prior, update }) => {
      const updated = assemblePdf(update, '/Root 1 0 R', prior);
      expect(inspectPdf(prior).pages).toBe(1);
      expect(inspectPdf(updated).pages).toBe(2);
      expect(await pdfLibPageCount(updated)).toBe(2);
    },
  );

  it.each([
    {
      name: 'reads an object stream by its indirect /Length even when the data holds the word endstream',
      catalog: [1, '<< /Type /Catalog /Lang (endstream) /Pages 2 0 R >>'] as PdfObjectSource,
      stream: { lengthIn: 6 },
    },
    {
      name: 'reads an object stream whose /Length is wrong up to endstream',
      catalog: CATALOG,
      stream: { length: 7 },
    },
  ])('$name', ({ catalog, stream }) => {
    const pdf = assemblePdf([...objectStream(5, [catalog, onePage], stream), [3, PAGE]], '/Root 1 0 R');
    expect(inspectPdf(pdf).pages).toBe(1);
  });
});

describe('inspectPdf encryption', () => {
  it('detects /Encrypt in a classic trailer', () => {
    const pdf = makeEncryptedTestPdf();
    expect(inspectPdf(pdf)).toEqual({
      isPdf: true,
      pages: 1,
      encrypted: true,
      bytes: pdf.length,
      version: '1.4',
    });
  });

  it('detects /Encrypt in an xref stream dictionary', async () => {
    const pdf = await makeTestPdf({ pages: 2, useObjectStreams: true });
    const encrypted = fromLatin1(latin1(pdf).replace('/Type /XRef', '/Type /XRef /Encrypt 99 0 R'));
    expect(inspectPdf(encrypted)).toMatchObject({ encrypted: true, pages: 2 });
  });

  it('reports unencrypted PDFs as such', async () => {
    expect(inspectPdf(await makeTestPdf({ pages: 1 })).encrypted).toBe(false);
  });
});

describe('inspectPdfFully', () => {
  it('falls back to pdf-lib when the byte scan cannot find the trailer', async () => {
    const pdf = await makeTestPdf({ pages: 7, useObjectStreams: true });
    // pdf-lib only checks that /Encrypt resolves to an object.
    const broken = breakStartxref(
      fromLatin1(latin1(pdf).replace('/Type /XRef', '/Type /XRef /Encrypt 1 0 R')),
    );
    expect(inspectPdf(broken)).toMatchObject({ pages: null, encrypted: false });
    expect(await inspectPdfFully(broken)).toMatchObject({ pages: 7, encrypted: true });
  });

  it('gives the same answer as inspectPdf when the scan is conclusive', async () => {
    const pdf = await makeTestPdf({ pages: 4 });
    expect(await inspectPdfFully(pdf)).toEqual(inspectPdf(pdf));
  });
});

describe('inspectPdf on bad input', () => {
  it.each([
    ['empty input', new Uint8Array(0)],
    ['random bytes', new Uint8Array(randomBytes(4096))],
    ['plain text', fromLatin1('hello, this is not a PDF')],
    ['a PNG', fromLatin1('\x89PNG\r\n\x1a\n\0\0\0\rIHDR')],
    ['a header past the first 1024 bytes', fromLatin1(`${' '.repeat(1024)}%PDF-1.7\n`)],
  ])('says %s is not a PDF', async (_, bytes) => {
    const expected = { isPdf: false, pages: null, encrypted: false, bytes: bytes.length, version: null };
    expect(inspectPdf(bytes)).toEqual(expected);
    expect(await inspectPdfFully(bytes)).toEqual(expected);
  });

  it.each([false, true])(
    'gives no page count for a PDF truncated in half (object streams: %s)',
    async (useObjectStreams) => {
      const pdf = await makeTestPdf({ pages: 7, useObjectStreams });
      const truncated = pdf.subarray(0, Math.floor(pdf.length / 2));
      const expected = {
        isPdf: true,
        pages: null,
        encrypted: false,
        bytes: truncated.length,
        version: '1.7',
      };
      expect(inspectPdf(truncated)).toEqual(expected);
      expect(await inspectPdfFully(truncated)).toEqual(expected);
    },
  );

  it('gives no page count for garbage behind a PDF header', async () => {
    const bytes = new Uint8Array(Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(8192)]));
    expect(inspectPdf(bytes)).toMatchObject({ isPdf: true, pages: null, version: '1.7' });
    expect(await inspectPdfFully(bytes)).toMatchObject({ isPdf: true, pages: null, version: '1.7' });
  });

  it('gives no page count when the trailer names no catalog', () => {
    const pdf = assemblePdf([[1, '<< /Type /Pages /Kids [] /Count 3 >>']], '/Info 1 0 R');
    expect(inspectPdf(pdf)).toMatchObject({ isPdf: true, pages: null });
  });

  it('gives no page count for a corrupt object stream', async () => {
    const pdf = await makeTestPdf({ pages: 3 });
    const text = latin1(pdf);
    const data = text.indexOf('stream', text.indexOf('/ObjStm')) + 'stream\n'.length;
    const corrupt = fromLatin1(text.slice(0, data) + 'x'.repeat(20) + text.slice(data + 20));
    expect(inspectPdf(corrupt)).toMatchObject({ isPdf: true, pages: null });
  });

  describe('gives up, rather than stall, on hostile input', () => {
    const MiB = 1024 * 1024;
    const filled = (unit: string, tail = '\ntrailer << /Root 1 0 R >>') =>
      new Uint8Array(
        Buffer.from(`%PDF-1.7\n${unit.repeat(Math.ceil((4 * MiB) / unit.length))}${tail}`, 'latin1'),
      );
    const bomb = deflateSync(Buffer.alloc(32 * MiB, 0x20));
    const bombStream = (num: number) =>
      `${num} 0 obj << /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ${bomb.length} >>\nstream\n${bomb.toString('latin1')}\nendstream endobj\n`;

    it.each([
      ['millions of /ObjStm names', filled('/ObjStm ')],
      ['millions of object-stream headers', filled('1 0 obj<</Type/ObjStm/N 9/First 9')],
      ['millions of near matches for the catalog', filled('11 0 obj ')],
      ['dictionaries nested in each other', filled('trailer<</A[', '')],
      ['a string that never closes', filled('(', '')],
      [
        'object streams that inflate to 32 MiB each',
        fromLatin1(`%PDF-1.7\n${[10, 11, 12, 13].map(bombStream).join('')}trailer << /Root 1 0 R >>`),
      ],
    ])('%s', (_, bytes) => {
      expect(inspectPdf(bytes)).toMatchObject({ isPdf: true, pages: null });
    });
  });
});
