import { PDFDocument, ParseSpeeds } from 'pdf-lib';

export function loadPdf(bytes: Uint8Array): Promise<PDFDocument> {
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
