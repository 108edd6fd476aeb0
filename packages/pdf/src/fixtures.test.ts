import { PDFDocument, PDFDict, PDFName } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import { makeEncryptedTestPdf, makePaddedTestPdf, makeTestPdf } from './fixtures';
import { pageContents, shownTexts } from './test-support';

const MiB = 1024 * 1024;

function fontsOf(doc: PDFDocument, index: number): PDFDict | undefined {
  return doc.getPage(index).node.Resources()?.lookupMaybe(PDFName.of('Font'), PDFDict);
}

describe('makeTestPdf', () => {
  it('draws the given text on each page in Helvetica', async () => {
    const doc = await PDFDocument.load(
      await makeTestPdf({ pages: 3, text: (page) => `Hello from page ${page}` }),
    );
    expect(pageContents(doc).map(shownTexts)).toEqual([
      ['Hello from page 1'],
      ['Hello from page 2'],
      ['Hello from page 3'],
    ]);
    expect(fontsOf(doc, 0)?.keys()).toHaveLength(1);
  });

  it('draws "Page n" by default', async () => {
    const doc = await PDFDocument.load(await makeTestPdf({ pages: 2, useObjectStreams: false }));
    expect(pageContents(doc).map(shownTexts)).toEqual([['Page 1'], ['Page 2']]);
  });

  it('makes image-only pages: an image drawn, no text and no fonts', async () => {
    const doc = await PDFDocument.load(await makeTestPdf({ pages: 4, imageOnly: true }));
    expect(doc.getPageCount()).toBe(4);
    for (const [index, content] of pageContents(doc).entries()) {
      expect(content).toMatch(/\/\S+ Do/);
      expect(content).not.toMatch(/\bBT\b|\bTj\b|\bTJ\b|\bTf\b/);
      expect(fontsOf(doc, index)?.keys() ?? []).toHaveLength(0);
    }
  });

  it('writes object streams only when asked to (pdf-lib default: yes)', async () => {
    const has = (bytes: Uint8Array) => Buffer.from(bytes).includes('/ObjStm');
    expect(has(await makeTestPdf({ pages: 1 }))).toBe(true);
    expect(has(await makeTestPdf({ pages: 1, useObjectStreams: false }))).toBe(false);
  });
});

describe('makePaddedTestPdf', () => {
  it('comes within 2% of the target size, with the pages asked for', async () => {
    const pdf = await makePaddedTestPdf({ pages: 12, targetBytes: 3 * MiB });
    expect(Math.abs(pdf.length - 3 * MiB) / (3 * MiB)).toBeLessThan(0.02);
    expect((await PDFDocument.load(pdf)).getPageCount()).toBe(12);
  });
});

describe('makeEncryptedTestPdf', () => {
  it('is a one-page PDF that pdf-lib sees as encrypted', async () => {
    const doc = await PDFDocument.load(makeEncryptedTestPdf(), { ignoreEncryption: true });
    expect(doc.isEncrypted).toBe(true);
    expect(doc.getPageCount()).toBe(1);
  });
});
