import { describe, expect, it } from 'vitest';
import { PDF_LIMITS, fitsProviderLimits } from './limits';
import type { PdfInfo } from './inspect';

const MiB = 1024 * 1024;
const info = (overrides: Partial<PdfInfo>): PdfInfo => ({
  isPdf: true,
  pages: 10,
  encrypted: false,
  bytes: 1000,
  version: '1.7',
  ...overrides,
});

describe('fitsProviderLimits', () => {
  it('accepts a PDF within the limits, including exactly 100 pages and a 32 MiB encoding', () => {
    expect(fitsProviderLimits(info({}))).toEqual({ ok: true });
    expect(fitsProviderLimits(info({ pages: 100 }))).toEqual({ ok: true });
    expect(fitsProviderLimits(info({ bytes: 24 * MiB }))).toEqual({ ok: true });
  });

  it('rejects what is not a PDF, is encrypted, too large or too long', () => {
    expect(fitsProviderLimits(info({ isPdf: false, pages: null }))).toMatchObject({
      ok: false,
      reason: 'not_pdf',
    });
    expect(fitsProviderLimits(info({ encrypted: true }))).toMatchObject({ ok: false, reason: 'encrypted' });
    expect(fitsProviderLimits(info({ bytes: 24 * MiB + 1 }))).toMatchObject({
      ok: false,
      reason: 'too_large',
    });
    expect(fitsProviderLimits(info({ pages: 101 }))).toMatchObject({
      ok: false,
      reason: 'too_many_pages',
      message: 'The PDF has 101 pages, over the limit of 100.',
    });
  });

  it('lets an unknown page count through, for the provider to judge', () => {
    expect(fitsProviderLimits(info({ pages: null }))).toEqual({ ok: true });
  });

  it('takes other limits, such as 600 pages for 1M-token models', () => {
    expect(fitsProviderLimits(info({ pages: 500 }), { ...PDF_LIMITS, maxPages: 600 })).toEqual({ ok: true });
  });
});
