import type Anthropic from '@anthropic-ai/sdk';
import {
  base64Length,
  encodeBase64,
  fitsProviderLimits,
  inspectPdf,
  inspectPdfFully,
  PDF_LIMITS,
  PdfError,
  splitPdf,
  type PdfChunk,
  type PdfLimitViolation,
  type SplitPdfOptions,
} from '@keygate/pdf';

export { PdfError, PDF_LIMITS, type PdfChunk, type PdfErrorCode, type SplitPdfOptions } from '@keygate/pdf';

export type PdfBytes = Uint8Array | ArrayBuffer;

export interface PdfInspection {
  isPdf: boolean;
  /** null when the page count could not be read (the provider has the last word then). */
  pages: number | null;
  encrypted: boolean;
  /** Size of the file. */
  bytes: number;
  /** Size of its base64 encoding, which is what counts against the request limit. */
  base64Bytes: number;
  version: string | null;
  /** It can be sent whole in one request (pages and size within the limits). */
  fits: boolean;
  /** Why it does not fit, when it does not. */
  problem: { reason: PdfLimitViolation; message: string } | null;
}

export interface PdfLimitOptions {
  /** Pages per request; default 100 (600 for models with a 1M-token context window). */
  maxPages?: number;
  /** Bytes per request; default 32 MB. */
  maxRequestBytes?: number;
}

export interface DocumentBlockOptions {
  title?: string;
  context?: string;
  /** Ask for citations into the document. */
  citations?: boolean;
  cacheControl?: Anthropic.CacheControlEphemeral;
}

export function toBytes(bytes: PdfBytes): Uint8Array {
  return bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
}

/**
 * Pages, size and encryption of a PDF, and whether it fits the provider's limits.
 *
 * @example
 * const info = await pdf.inspect(await readFile('report.pdf'));
 * if (!info.fits) console.log(info.problem?.message);   // "The PDF has 250 pages, over the limit of 100."
 */
async function inspect(bytes: PdfBytes, limits: PdfLimitOptions = {}): Promise<PdfInspection> {
  const info = await inspectPdfFully(toBytes(bytes));
  const check = fitsProviderLimits(info, {
    maxPages: limits.maxPages ?? PDF_LIMITS.maxPages,
    maxRequestBytes: limits.maxRequestBytes ?? PDF_LIMITS.maxRequestBytes,
  });
  return {
    ...info,
    base64Bytes: base64Length(info.bytes),
    fits: check.ok,
    problem: check.ok ? null : { reason: check.reason, message: check.message },
  };
}

/**
 * The `document` content block for a PDF, base64-encoded. Throws a `PdfError` for a file that
 * is not a PDF or is encrypted (the provider refuses both).
 *
 * @example
 * await client.messages.create({
 *   model: 'claude-sonnet-4-6',
 *   max_tokens: 1024,
 *   messages: [{ role: 'user', content: [pdf.documentBlock(bytes, { title: 'Q3 report' }), { type: 'text', text: 'Key risks?' }] }],
 * });
 */
function documentBlock(bytes: PdfBytes, opts: DocumentBlockOptions = {}): Anthropic.DocumentBlockParam {
  const data = toBytes(bytes);
  // The same quick read the gateway makes: header and trailer, no full parse.
  const info = inspectPdf(data);
  if (!info.isPdf)
    throw new PdfError('invalid_pdf', 'The document is not a PDF (no %PDF- header in its first 1024 bytes).');
  if (info.encrypted)
    throw new PdfError(
      'encrypted',
      'Encrypted PDFs are not supported by the provider: remove the password first.',
    );
  return {
    type: 'document',
    source: { type: 'base64', media_type: 'application/pdf', data: encodeBase64(data) },
    ...(opts.title !== undefined && { title: opts.title }),
    ...(opts.context !== undefined && { context: opts.context }),
    ...(opts.citations !== undefined && { citations: { enabled: opts.citations } }),
    ...(opts.cacheControl !== undefined && { cache_control: opts.cacheControl }),
  };
}

/**
 * Splits a PDF into runs of consecutive pages that each fit one request, by page count and by
 * encoded size (pdf-lib copies the pages, so each chunk is a complete PDF).
 *
 * @example
 * for (const chunk of await pdf.split(bytes, { maxPages: 100 })) {
 *   console.log(chunk.fromPage, chunk.toPage, chunk.bytes.length);
 * }
 */
function split(bytes: PdfBytes, opts: SplitPdfOptions = {}): Promise<PdfChunk[]> {
  return splitPdf(toBytes(bytes), opts);
}

/** PDF helpers: inspect, build a document block, split by pages and size. */
export const pdf = { inspect, documentBlock, split } as const;
