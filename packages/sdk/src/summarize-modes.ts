import type Anthropic from '@anthropic-ai/sdk';
import { toFile } from '@anthropic-ai/sdk';
import type { PdfChunk } from '@keygate/pdf';
import type { Keygate } from './client';

/** Where summarizePdf is in its work, for a progress bar. */
export interface SummarizeProgress {
  stage: 'upload' | 'summarize' | 'batch' | 'reduce' | 'done';
  /** Parts finished in this stage, out of `total`. */
  done: number;
  total: number;
  /** The batch of the first pass (`mode: 'batch'`). */
  batchId?: string;
}

export const FILES_BETA = 'files-api-2025-04-14';

/** A document block for a part: its bytes inline, or a file uploaded once and referred to by id. */
export type PartSource = (part: PdfChunk, title: string) => Anthropic.ContentBlockParam;

/**
 * Uploads each part once (Files API) and returns the block that refers to it by `file_id`, plus
 * a cleanup that deletes the uploads.
 */
export async function uploadParts(
  client: Keygate,
  parts: PdfChunk[],
  onProgress: ((p: SummarizeProgress) => void) | undefined,
  request: Anthropic.RequestOptions,
): Promise<{ source: PartSource; remove(): Promise<void> }> {
  const ids = new Map<number, string>();
  let done = 0;
  for (const part of parts) {
    const file = await client.beta.files.upload(
      {
        file: await toFile(part.bytes, `part-${part.fromPage}-${part.toPage}.pdf`, {
          type: 'application/pdf',
        }),
        betas: [FILES_BETA],
      },
      request,
    );
    ids.set(part.index, file.id);
    onProgress?.({ stage: 'upload', done: ++done, total: parts.length });
  }
  return {
    source: (part, title) =>
      ({ type: 'document', title, source: { type: 'file', file_id: ids.get(part.index)! } }) as never,
    async remove() {
      for (const id of ids.values()) await client.beta.files.delete(id, { betas: [FILES_BETA] }, request);
    },
  };
}

/**
 * The first pass as one message batch (half price): every part's request at once, polled until
 * the batch ends, then each part's text by its custom_id. A part that did not succeed fails the whole.
 */
export async function batchPass(
  client: Keygate,
  requests: { customId: string; params: Anthropic.MessageCreateParamsNonStreaming }[],
  opts: {
    pollMs: number;
    onProgress?: ((p: SummarizeProgress) => void) | undefined;
    signal?: AbortSignal | undefined;
    request: Anthropic.RequestOptions;
  },
): Promise<Map<string, Anthropic.Message>> {
  const created = await client.messages.batches.create(
    { requests: requests.map((r) => ({ custom_id: r.customId, params: r.params })) },
    opts.request,
  );
  let batch = created;
  const total = requests.length;
  while (batch.processing_status !== 'ended') {
    const c = batch.request_counts;
    opts.onProgress?.({ stage: 'batch', done: total - c.processing, total, batchId: batch.id });
    await sleep(opts.pollMs, opts.signal);
    batch = await client.messages.batches.retrieve(batch.id, {}, opts.request);
  }
  opts.onProgress?.({ stage: 'batch', done: total, total, batchId: batch.id });
  const out = new Map<string, Anthropic.Message>();
  for await (const line of await client.messages.batches.results(batch.id, {}, opts.request)) {
    if (line.result.type !== 'succeeded')
      throw new Error(`Part ${line.custom_id} of batch ${batch.id} did not succeed: ${line.result.type}`);
    out.set(line.custom_id, line.result.message);
  }
  return out;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}
