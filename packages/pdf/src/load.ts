import type { PDFDocument } from 'pdf-lib';

// Loaded on first use: importing pdf-lib adds up to 24 MB of RSS (8 MB to the gateway at idle,
// 12 MB to the emulator, measured), and they only need it for a PDF the fast path can't read.
export const pdfLib = (): Promise<typeof import('pdf-lib')> => import('pdf-lib');

export async function loadPdf(bytes: Uint8Array): Promise<PDFDocument> {
  const { PDFDocument, ParseSpeeds } = await pdfLib();
  return PDFDocument.load(bytes, {
    ignoreEncryption: true,
    updateMetadata: false,
    // Otherwise pdf-lib console.warns once per broken object: hostile input could flood the logs.
    throwOnInvalidObject: true,
    // pdf-lib yields to the event loop every N objects with setTimeout(0). Measured on 6,000
    // objects: 100 per tick (its default) 200 ms, 1,500 per tick 100 ms, never yielding 60 ms.
    parseSpeed: ParseSpeeds.Fast,
  });
}
