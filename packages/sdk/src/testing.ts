/**
 * Sample PDFs for tests and demos against the emulator (`@keygate/sdk/testing`): text pages,
 * image-only pages like a scan, files padded to a size, and an encrypted one.
 *
 * @example
 * import { makeTestPdf } from '@keygate/sdk/testing';
 * const report = await makeTestPdf({ pages: 250, text: (n) => `Page ${n}: quarterly figures` });
 * const scan = await makeTestPdf({ pages: 12, imageOnly: true });
 */
export {
  makeEncryptedTestPdf,
  makePaddedTestPdf,
  makeTestPdf,
  type PaddedTestPdfOptions,
  type TestPdfOptions,
} from '@keygate/pdf';
