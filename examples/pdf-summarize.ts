/**
 * A 250-page PDF, over the provider's 100-page limit, summarized by split-and-summarize: the
 * pages go in chunks that each fit a request, each chunk is summarized, then the summaries are
 * summarized. Pass a path to use your own PDF.
 *
 * Run: pnpm --filter @keygate/examples pdf-summarize [file.pdf]
 */
import Keygate, { pdf, summarizePdf } from '@keygate/sdk';
import { makeTestPdf } from '@keygate/sdk/testing';
import { readFile } from 'node:fs/promises';
import { isMain, runExample, type Connection, type Print } from './lib/offline';

export async function samplePdf(pages = 250): Promise<Uint8Array> {
  return makeTestPdf({
    pages,
    text: (n) => `Annual report, section ${Math.ceil(n / 10)}, page ${n}: revenue grew in every region.`,
  });
}

export async function main({ baseURL, appKey }: Connection, print: Print, bytes?: Uint8Array) {
  const document = bytes ?? (process.argv[2] ? await readFile(process.argv[2]) : await samplePdf());
  const info = await pdf.inspect(document);
  print(
    `${info.pages} pages, ${(info.bytes / 1024).toFixed(0)} KiB: ${info.fits ? 'fits one request' : info.problem?.message}`,
  );

  const client = new Keygate({ baseURL, appKey });
  const summary = await summarizePdf(client, document, {
    model: 'claude-sonnet-4-6',
    instruction: 'Summarize the annual report for the board: results, risks, outlook.',
    format: 'bullets',
    title: 'Annual report',
    concurrency: 3,
  });

  print(`strategy ${summary.strategy}, group ${summary.groupId}`);
  for (const chunk of summary.chunks)
    print(`  pages ${chunk.fromPage}–${chunk.toPage}: ${chunk.summary.slice(0, 90)}…`);
  print(`result: ${summary.result}`);
  print(
    `usage: ${summary.usage.calls} calls, ${summary.usage.input_tokens} input + ${summary.usage.output_tokens} output tokens`,
  );
  return summary;
}

if (isMain(import.meta.url)) await runExample(main);
