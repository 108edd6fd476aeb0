import type { PDFDocument } from 'pdf-lib';
import { base64Length } from './base64';
import { PdfError } from './errors';
import { PDF_LIMITS } from './limits';
import { loadPdf, pdfLib } from './load';

export type PdfChunk = {
  /** 0-based position of the chunk. */
  index: number;
  /** First page of the source document in this chunk, 1-based. */
  fromPage: number;
  /** Last page of the source document in this chunk, 1-based and inclusive. */
  toPage: number;
  pages: number;
  bytes: Uint8Array;
};

export type SplitPdfOptions = {
  /** Most pages per chunk; default 100. */
  maxPages?: number;
  /** Most bytes of each chunk's base64 encoding; default 24 MiB, leaving room in a 32 MB request. */
  maxBytes?: number;
};

export const DEFAULT_CHUNK_BASE64_BYTES = 24 * 1024 * 1024;

type PageRange = { from: number; to: number };

/**
 * Splits a PDF into chunks of consecutive pages, each within `maxPages` and `maxBytes`. A chunk
 * that comes out too large is halved until it fits.
 * Throws a `PdfError`: `invalid_pdf`, `encrypted`, or `page_too_large` when a single page does not fit.
 *
 * @example
 * for (const chunk of await splitPdf(bytes, { maxPages: 100 })) {
 *   const data = encodeBase64(chunk.bytes);
 *   // one request per chunk, naming pages chunk.fromPage to chunk.toPage
 * }
 */
export async function splitPdf(bytes: Uint8Array, opts: SplitPdfOptions = {}): Promise<PdfChunk[]> {
  const maxPages = opts.maxPages ?? PDF_LIMITS.maxPages;
  const maxBytes = opts.maxBytes ?? DEFAULT_CHUNK_BASE64_BYTES;
  if (!Number.isSafeInteger(maxPages) || maxPages < 1)
    throw new RangeError(`maxPages must be a positive integer, got ${maxPages}`);
  if (!(maxBytes > 0)) throw new RangeError(`maxBytes must be positive, got ${maxBytes}`);

  const { source, total } = await loadSource(bytes);
  const pending: PageRange[] = [];
  for (let from = 1; from <= total; from += maxPages)
    pending.push({ from, to: Math.min(total, from + maxPages - 1) });
  pending.reverse();

  const chunks: PdfChunk[] = [];
  for (let range = pending.pop(); range !== undefined; range = pending.pop()) {
    const chunk = await copyRange(source, range);
    const encoded = base64Length(chunk.length);
    if (encoded <= maxBytes) {
      chunks.push({
        index: chunks.length,
        fromPage: range.from,
        toPage: range.to,
        pages: range.to - range.from + 1,
        bytes: chunk,
      });
    } else if (range.from === range.to) {
      const message = `Page ${range.from} alone takes ${encoded} bytes as base64, over the ${maxBytes}-byte chunk limit.`;
      throw new PdfError('page_too_large', message);
    } else {
      const middle = Math.floor((range.from + range.to) / 2);
      pending.push({ from: middle + 1, to: range.to }, { from: range.from, to: middle });
    }
  }
  return chunks;
}

async function loadSource(bytes: Uint8Array): Promise<{ source: PDFDocument; total: number }> {
  let source: PDFDocument;
  let total: number;
  try {
    source = await loadPdf(bytes);
    total = source.getPageCount();
  } catch (error) {
    throw new PdfError('invalid_pdf', 'The document could not be parsed as a PDF.', { cause: error });
  }
  if (source.isEncrypted) throw new PdfError('encrypted', 'Encrypted PDFs cannot be split.');
  return { source, total };
}

async function copyRange(source: PDFDocument, range: PageRange): Promise<Uint8Array> {
  const doc = await (await pdfLib()).PDFDocument.create({ updateMetadata: false });
  const indices = Array.from({ length: range.to - range.from + 1 }, (_, i) => range.from - 1 + i);
  for (const page of await doc.copyPages(source, indices)) doc.addPage(page);
  return doc.save({ addDefaultPage: false });
}
