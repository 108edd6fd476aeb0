import type Anthropic from '@anthropic-ai/sdk';
import { DEFAULT_CHUNK_BASE64_BYTES, PDF_LIMITS, PdfError } from '@keygate/pdf';
import type { Keygate } from './client';
import { mapBounded } from './concurrency';
import { groupClient } from './group';
import { pdf, type PdfBytes } from './pdf';
import type { PdfChunk } from '@keygate/pdf';
import {
  batchPass,
  FILES_BETA,
  type PartSource,
  type SummarizeProgress,
  uploadParts,
} from './summarize-modes';
import type { UsageSummary } from './usage-types';

/** A preset, or your own words (for example "a table of obligations with due dates"). */
export type SummaryFormat = 'text' | 'markdown' | 'bullets' | 'json' | (string & {});

export interface SummarizePdfOptions {
  model: Anthropic.Model;
  /** What to produce; default "Summarize the document." */
  instruction?: string;
  format?: SummaryFormat;
  /** Given to the model with each part, so it knows what it reads. */
  title?: string;
  /** Pages per request; default 100 (600 for models with a 1M-token context window). */
  maxPages?: number;
  /** Bytes of base64 per request; default 24 MiB, leaving room in a 32 MB request. */
  maxBytes?: number;
  /** Part summaries in flight at once; default 4. */
  concurrency?: number;
  /** For the final answer (single request or reduce step); default 2048. */
  maxTokens?: number;
  /** For each part's summary; default 1024. */
  chunkMaxTokens?: number;
  /** The request group of every call; default: the client's group, else a new one. */
  groupId?: string;
  signal?: AbortSignal;
  /** Per-request options of the official client for every call (headers, timeout, maxRetries, …). */
  requestOptions?: Anthropic.RequestOptions;
  /**
   * `messages` (default): each part inline in its request. `files`: each part uploaded once
   * (Files API) and referred to by id, the uploads deleted at the end. `batch`: the parts'
   * summaries as one message batch (half price; it may take minutes to hours), then the summary
   * of summaries as a normal call.
   */
  mode?: 'messages' | 'files' | 'batch';
  /** Told as parts are uploaded, summarized or the batch advances. */
  onProgress?: (progress: SummarizeProgress) => void;
  /** How often a batch is polled; default 10 s. */
  batchPollMs?: number;
}

export interface ChunkSummary {
  index: number;
  fromPage: number;
  toPage: number;
  pages: number;
  summary: string;
  messageId: string;
}

export interface PdfSummary {
  result: string;
  /** `single`: the whole document in one request; `map_reduce`: parts, then a summary of summaries. */
  strategy: 'single' | 'map_reduce';
  pages: number | null;
  /** One per part (empty when the document went whole). */
  chunks: ChunkSummary[];
  /** The model's final message. */
  message: Anthropic.Message;
  groupId: string;
  /** Totals of every call made, retries included. */
  usage: UsageSummary;
}

const FORMATS: Record<string, string> = {
  text: 'Write plain prose paragraphs, without Markdown.',
  markdown: 'Format the answer as Markdown, with short headings.',
  bullets: 'Answer as a bulleted list of the key points.',
  json: 'Answer with a single JSON object and nothing around it.',
};

/**
 * Summarizes a PDF of any length. One that fits a request (pages and size) is sent whole, so
 * the model keeps its cross-page context. A longer one is split into page ranges that each fit;
 * each part is summarized (`concurrency` at a time, with the SDK's retries), then one more
 * request writes the answer from the part summaries. Every call is in one request group.
 *
 * @example
 * const { result, chunks, usage } = await summarizePdf(client, await readFile('contract.pdf'), {
 *   model: 'claude-sonnet-4-6',
 *   instruction: 'List the parties, the term and every termination clause.',
 *   format: 'bullets',
 * });
 * console.log(result, `${chunks.length} parts`, usage.input_tokens);
 */
export async function summarizePdf(
  client: Keygate,
  bytes: PdfBytes,
  opts: SummarizePdfOptions,
): Promise<PdfSummary> {
  const maxPages = opts.maxPages ?? PDF_LIMITS.maxPages;
  const maxBytes = opts.maxBytes ?? DEFAULT_CHUNK_BASE64_BYTES;
  const info = await pdf.inspect(bytes, { maxPages, maxRequestBytes: maxBytes });
  if (!info.isPdf) throw new PdfError('invalid_pdf', 'The document is not a PDF.');
  if (info.encrypted)
    throw new PdfError(
      'encrypted',
      'Encrypted PDFs are not supported by the provider: remove the password first.',
    );

  const { group, groupId } = groupClient(client, opts.groupId);
  const instruction = opts.instruction ?? 'Summarize the document.';
  const format = opts.format === undefined ? '' : (FORMATS[opts.format] ?? `Format: ${opts.format}`);
  const ask = async (content: Anthropic.ContentBlockParam[], maxTokens: number, signal?: AbortSignal) => {
    const request = { ...opts.requestOptions, ...(signal && { signal }) };
    const message = await group.messages.create(
      { model: opts.model, max_tokens: maxTokens, messages: [{ role: 'user', content }] },
      request,
    );
    return { message, text: textOf(message) };
  };
  const done = (
    strategy: PdfSummary['strategy'],
    answer: { message: Anthropic.Message; text: string },
    chunks: ChunkSummary[],
  ): PdfSummary => ({
    result: answer.text,
    strategy,
    pages: info.pages,
    chunks,
    message: answer.message,
    groupId,
    usage: group.usage.group(groupId),
  });

  if (info.fits) {
    const prompt = [instruction, format].filter(Boolean).join('\n\n');
    const answer = await ask(
      [pdf.documentBlock(bytes, opts.title ? { title: opts.title } : {}), { type: 'text', text: prompt }],
      opts.maxTokens ?? 2048,
      opts.signal,
    );
    return done('single', answer, []);
  }

  const parts = await pdf.split(bytes, { maxPages, maxBytes });
  const total = parts.reduce((n, p) => n + p.pages, 0);
  const about = opts.title ? ` ("${opts.title}")` : '';
  const request = { ...opts.requestOptions };
  const uploads = opts.mode === 'files' ? await uploadParts(group, parts, opts.onProgress, request) : null;
  const source: PartSource = uploads?.source ?? ((part, title) => pdf.documentBlock(part.bytes, { title }));
  const partContent = (part: PdfChunk): Anthropic.ContentBlockParam[] => {
    const text =
      `Pages ${part.fromPage}–${part.toPage} of ${total}: one part of a longer document${about}, summarized part by part. ` +
      'Summarize what these pages contain, keeping the facts, figures and names a final answer will need; ' +
      `your summary will be combined with the other parts' summaries. The final answer's goal: ${instruction}`;
    return [
      source(part, `${opts.title ?? 'Document'}, pages ${part.fromPage}–${part.toPage}`),
      { type: 'text', text },
    ];
  };
  const chunkOf = (part: PdfChunk, message: Anthropic.Message): ChunkSummary => ({
    index: part.index,
    fromPage: part.fromPage,
    toPage: part.toPage,
    pages: part.pages,
    summary: textOf(message),
    messageId: message.id,
  });
  let chunks: ChunkSummary[];
  try {
    if (opts.mode === 'batch') {
      const params = (part: PdfChunk) => ({
        model: opts.model,
        max_tokens: opts.chunkMaxTokens ?? 1024,
        messages: [{ role: 'user' as const, content: partContent(part) }],
      });
      const results = await batchPass(
        group,
        parts.map((part) => ({ customId: `part-${part.index}`, params: params(part) })),
        { pollMs: opts.batchPollMs ?? 10_000, onProgress: opts.onProgress, signal: opts.signal, request },
      );
      chunks = parts.map((part) => chunkOf(part, results.get(`part-${part.index}`)!));
    } else {
      const files = uploads
        ? { ...request, headers: { ...request.headers, 'anthropic-beta': FILES_BETA } }
        : request;
      let done = 0;
      chunks = await mapBounded(
        parts,
        opts.concurrency ?? 4,
        async (part, _index, signal) => {
          const message = await group.messages.create(
            {
              model: opts.model,
              max_tokens: opts.chunkMaxTokens ?? 1024,
              messages: [{ role: 'user', content: partContent(part) }],
            },
            { ...files, ...(signal && { signal }) },
          );
          opts.onProgress?.({ stage: 'summarize', done: ++done, total: parts.length });
          return chunkOf(part, message);
        },
        opts.signal ?? opts.requestOptions?.signal ?? undefined,
      );
    }
  } finally {
    await uploads?.remove();
  }
  opts.onProgress?.({ stage: 'reduce', done: 0, total: 1 });
  const summaries = chunks
    .map((c) => `<part pages="${c.fromPage}-${c.toPage}">\n${c.summary}\n</part>`)
    .join('\n\n');
  const prompt =
    `Below are summaries of the ${chunks.length} consecutive parts of a ${total}-page document${about}, each written from its own pages.\n\n` +
    `${summaries}\n\nTreat these summaries as the document's content. ${instruction}${format ? `\n\n${format}` : ''}`;
  const answer = await ask([{ type: 'text', text: prompt }], opts.maxTokens ?? 2048, opts.signal);
  opts.onProgress?.({ stage: 'done', done: 1, total: 1 });
  return done('map_reduce', answer, chunks);
}

function textOf(message: Anthropic.Message): string {
  return message.content
    .filter((b): b is Anthropic.TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('');
}
