import { loadPdf } from './load';
import { PdfObjects, isName } from './objects';
import { indexOfText, latin1 } from './bytes';
import type { PdfDict } from './pdf-syntax';

export type PdfInfo = {
  isPdf: boolean;
  /** null when the page count could not be read. */
  pages: number | null;
  encrypted: boolean;
  bytes: number;
  version: string | null;
};

// Acrobat accepts the header anywhere in the first 1024 bytes.
const HEADER_WINDOW = 1024;
const VERSION = /^%PDF-(\d+\.\d+)/;

/**
 * Header, encryption and page count of a PDF, read from the bytes without parsing the whole
 * file: the trailer, the catalog and the root page tree's /Count, inflating object streams when
 * they hold them. Never throws: a non-PDF gives `isPdf: false`; a PDF whose structure cannot be
 * followed gives `pages: null` (`inspectPdfFully` then tries a full parse).
 *
 * @example
 * const bytes = decodeBase64Strict(block.source.data);
 * const info = bytes && inspectPdf(bytes);
 * if (info && !fitsProviderLimits(info).ok) …
 */
export function inspectPdf(bytes: Uint8Array): PdfInfo {
  const header = indexOfText(bytes.subarray(0, HEADER_WINDOW), '%PDF-');
  if (header === -1)
    return { isPdf: false, pages: null, encrypted: false, bytes: bytes.length, version: null };
  const version = VERSION.exec(latin1(bytes, header, header + 16))?.[1] ?? null;
  const objects = new PdfObjects(bytes);
  const trailer = objects.trailer();
  return {
    isPdf: true,
    pages: trailer === null ? null : readPageCount(objects, trailer),
    encrypted: trailer?.has('Encrypt') ?? false,
    bytes: bytes.length,
    version,
  };
}

/**
 * `inspectPdf`, then, when it cannot read the page count, a full parse with pdf-lib, which
 * recovers some damaged files. That parse takes time in proportion to the number of objects.
 */
export async function inspectPdfFully(bytes: Uint8Array): Promise<PdfInfo> {
  const info = inspectPdf(bytes);
  if (!info.isPdf || info.pages !== null) return info;
  try {
    const doc = await loadPdf(bytes);
    return { ...info, pages: doc.getPageCount(), encrypted: info.encrypted || doc.isEncrypted };
  } catch {
    return info;
  }
}

function readPageCount(objects: PdfObjects, trailer: PdfDict): number | null {
  const root = trailer.get('Root');
  if (root?.type !== 'ref') return null;
  const pagesRef = objects.dict(root)?.get('Pages');
  if (pagesRef?.type !== 'ref') return null;
  const tree = objects.dict(pagesRef);
  const type = tree?.get('Type');
  const count = tree?.get('Count');
  if (type !== undefined && !isName(type, 'Pages')) return null;
  if (count?.type !== 'number' || !Number.isSafeInteger(count.value) || count.value < 0) return null;
  return count.value;
}
