export type PdfErrorCode = 'invalid_pdf' | 'encrypted' | 'page_too_large';

export class PdfError extends Error {
  override readonly name = 'PdfError';

  constructor(
    readonly code: PdfErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
