import { base64Length } from './base64';
import type { PdfInfo } from './inspect';

export type PdfLimits = { maxPages: number; maxRequestBytes: number };

/** The provider's limits for models with a context window under 1M tokens (600 pages otherwise). */
export const PDF_LIMITS: Readonly<PdfLimits> = Object.freeze({
  maxPages: 100,
  maxRequestBytes: 32 * 1024 * 1024,
});

export type PdfLimitViolation = 'not_pdf' | 'encrypted' | 'too_large' | 'too_many_pages';

export type PdfLimitCheck = { ok: true } | { ok: false; reason: PdfLimitViolation; message: string };

/**
 * Whether a document can be sent as a base64 PDF block. Only known violations fail: a PDF whose
 * page count could not be read passes, and the provider has the last word on it.
 */
export function fitsProviderLimits(info: PdfInfo, limits: PdfLimits = PDF_LIMITS): PdfLimitCheck {
  if (!info.isPdf) return { ok: false, reason: 'not_pdf', message: 'The document is not a PDF.' };
  if (info.encrypted) return { ok: false, reason: 'encrypted', message: 'Encrypted PDFs are not supported.' };
  const encoded = base64Length(info.bytes);
  if (encoded > limits.maxRequestBytes) {
    const message = `The PDF takes ${encoded} bytes as base64, over the ${limits.maxRequestBytes}-byte request limit.`;
    return { ok: false, reason: 'too_large', message };
  }
  if (info.pages !== null && info.pages > limits.maxPages) {
    const message = `The PDF has ${info.pages} pages, over the limit of ${limits.maxPages}.`;
    return { ok: false, reason: 'too_many_pages', message };
  }
  return { ok: true };
}
