export { decodeBase64Strict, base64Length } from './base64';
export { encodeBase64 } from './bytes';
export { PdfError, type PdfErrorCode } from './errors';
export { inspectPdf, inspectPdfFully, type PdfInfo } from './inspect';
export {
  PDF_LIMITS,
  fitsProviderLimits,
  type PdfLimits,
  type PdfLimitCheck,
  type PdfLimitViolation,
} from './limits';
export { splitPdf, DEFAULT_CHUNK_BASE64_BYTES, type PdfChunk, type SplitPdfOptions } from './split';
export {
  makeTestPdf,
  makePaddedTestPdf,
  makeEncryptedTestPdf,
  type TestPdfOptions,
  type PaddedTestPdfOptions,
} from './fixtures';
