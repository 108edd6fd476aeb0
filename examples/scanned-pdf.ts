/**
 * A scanned PDF: its pages are images with no text layer. The provider reads every page as an
 * image too, so nothing special is needed: inspect it, send it as a document block, ask.
 *
 * Run: pnpm --filter @keygate/examples scanned-pdf [file.pdf]
 */
import Keygate, { pdf } from '@keygate/sdk';
import { makeTestPdf } from '@keygate/sdk/testing';
import { readFile } from 'node:fs/promises';
import { isMain, runExample, type Connection, type Print } from './lib/offline';

export async function main({ baseURL, appKey }: Connection, print: Print, bytes?: Uint8Array) {
  const scan =
    bytes ??
    (process.argv[2] ? await readFile(process.argv[2]) : await makeTestPdf({ pages: 12, imageOnly: true }));
  const info = await pdf.inspect(scan);
  print(
    `scanned PDF: ${info.pages} pages, ${info.bytes} bytes, encrypted ${info.encrypted}, fits ${info.fits}`,
  );

  const client = new Keygate({ baseURL, appKey });
  const message = await client.messages.create({
    model: 'claude-sonnet-4-6',
    max_tokens: 500,
    messages: [
      {
        role: 'user',
        content: [
          pdf.documentBlock(scan, { title: 'Scanned invoice batch' }),
          { type: 'text', text: 'Transcribe the totals on each page.' },
        ],
      },
    ],
  });
  const text = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  print(`answer: ${text}`);
  print(`input tokens: ${message.usage.input_tokens} (every page is read as an image)`);
  return { info, message, text };
}

if (isMain(import.meta.url)) await runExample(main);
