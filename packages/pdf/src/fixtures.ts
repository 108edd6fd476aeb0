import { assemblePdf } from './hand-built-pdf';
import { pdfLib } from './load';
import { makeGradientPng } from './png';

export type TestPdfOptions = {
  pages: number;
  /** Text drawn on each page (1-based); default `Page n`. */
  text?: (page: number) => string;
  /** Each page is one drawn image and no text, like a scanned document. */
  imageOnly?: boolean;
  /** pdf-lib's default, true: objects are packed into compressed object streams. */
  useObjectStreams?: boolean;
};

export type PaddedTestPdfOptions = {
  pages: number;
  /** Approximate size of the file; spread over the pages as incompressible images. */
  targetBytes: number;
  useObjectStreams?: boolean;
};

const LETTER: [number, number] = [612, 792];

export async function makeTestPdf(opts: TestPdfOptions): Promise<Uint8Array> {
  const { PDFDocument, StandardFonts } = await pdfLib();
  const doc = await PDFDocument.create({ updateMetadata: false });
  if (opts.imageOnly) {
    const image = await doc.embedPng(makeGradientPng(32, 32));
    for (let n = 1; n <= opts.pages; n++) {
      doc.addPage(LETTER).drawImage(image, { x: 72, y: 72, width: 468, height: 648 });
    }
  } else {
    const font = await doc.embedFont(StandardFonts.Helvetica);
    for (let n = 1; n <= opts.pages; n++) {
      doc.addPage(LETTER).drawText(opts.text?.(n) ?? `Page ${n}`, { x: 72, y: 720, size: 12, font });
    }
  }
  return doc.save({ useObjectStreams: opts.useObjectStreams ?? true, addDefaultPage: false });
}

/** A text PDF whose pages each carry an image of random noise, so the file is about `targetBytes` and stays that size when split. */
export async function makePaddedTestPdf(opts: PaddedTestPdfOptions): Promise<Uint8Array> {
  const {
    PDFDocument,
    StandardFonts,
    concatTransformationMatrix,
    drawObject,
    popGraphicsState,
    pushGraphicsState,
  } = await pdfLib();
  const doc = await PDFDocument.create({ updateMetadata: false });
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const perPage = Math.max(1, Math.floor(opts.targetBytes / opts.pages));
  const width = Math.min(perPage, 1024);
  const height = Math.ceil(perPage / width);
  for (let n = 1; n <= opts.pages; n++) {
    const page = doc.addPage(LETTER);
    page.drawText(`Page ${n}`, { x: 72, y: 720, size: 12, font });
    const image = doc.context.stream(noise(width * height, n), {
      Type: 'XObject',
      Subtype: 'Image',
      Width: width,
      Height: height,
      ColorSpace: 'DeviceGray',
      BitsPerComponent: 8,
    });
    const name = page.node.newXObject('Noise', doc.context.register(image));
    page.pushOperators(
      pushGraphicsState(),
      concatTransformationMatrix(468, 0, 0, 600, 72, 72),
      drawObject(name),
      popGraphicsState(),
    );
  }
  return doc.save({ useObjectStreams: opts.useObjectStreams ?? true, addDefaultPage: false });
}

/** One blank page and an /Encrypt entry in the trailer; pdf-lib cannot write encrypted files. */
export function makeEncryptedTestPdf(): Uint8Array {
  const id = `<${'5a'.repeat(16)}>`;
  return assemblePdf(
    [
      [1, '<< /Type /Catalog /Pages 2 0 R >>'],
      [2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>'],
      [3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'],
      [4, `<< /Filter /Standard /V 1 /R 2 /P -44 /O <${'ab'.repeat(32)}> /U <${'cd'.repeat(32)}> >>`],
    ],
    `/Root 1 0 R /Encrypt 4 0 R /ID [${id} ${id}]`,
  );
}

// xorshift32: deterministic and fast, and deflate cannot shrink its output.
function noise(length: number, seed: number): Uint8Array {
  const words = new Uint32Array(Math.ceil(length / 4));
  let x = (seed * 0x9e3779b9) | 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x;
  }
  return new Uint8Array(words.buffer, 0, length);
}
