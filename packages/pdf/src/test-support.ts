import { PDFArray, PDFRawStream, decodePDFRawStream, type PDFDocument } from 'pdf-lib';

/** Each page's decoded content streams as latin1 text, for assertions in tests. */
export function pageContents(doc: PDFDocument): string[] {
  return doc.getPages().map((page) => {
    const contents = page.node.Contents();
    const streams =
      contents instanceof PDFArray ? contents.asArray().map((ref) => doc.context.lookup(ref)) : [contents];
    return streams
      .map((stream) =>
        stream instanceof PDFRawStream
          ? Buffer.from(decodePDFRawStream(stream).decode()).toString('latin1')
          : '',
      )
      .join('\n');
  });
}

/** Strings shown with Tj; pdf-lib writes standard-font text as hex strings. */
export function shownTexts(content: string): string[] {
  return [...content.matchAll(/<([0-9A-Fa-f]*)>\s*Tj/g)].map((match) =>
    Buffer.from(match[1] ?? '', 'hex').toString('latin1'),
  );
}
