import { inspectPdfFully } from '@keygate/pdf';
import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import { JsonBody } from './json-body';

// Loose by design: check what the gateway needs and what is certain to fail upstream;
// everything else is the provider's to judge, and the body is forwarded byte for byte.
const Block = z.looseObject({ type: z.string() });
const Message = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(Block)]),
});
const MessagesBody = z.looseObject({
  // A control character could never name a model, and a NUL would make the call log's batch
  // unwritable in PostgreSQL (text cannot hold \u0000), holding back every record after it.
  // Model ids are short; a longer one could not be stored in the call log's rollup index.
  model: z.string().min(1).max(256).regex(/^[^\x00-\x1f]+$/, 'must not contain control characters'),
  max_tokens: z.number().int().positive(),
  messages: z.array(Message),
  stream: z.boolean().optional(),
});
const CountTokensBody = MessagesBody.omit({ max_tokens: true, stream: true });

export interface ValidatedBody {
  model: string;
  stream: boolean;
}

export interface ValidateOptions {
  maxPdfPages: number;
}

function asJson<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new GatewayError('invalid_request_error', `Request body is not valid JSON: ${(err as Error).message}`);
  }
}

export async function validateMessagesBody(body: Buffer, opts: ValidateOptions, endpoint: 'messages' | 'count_tokens' = 'messages'): Promise<ValidatedBody> {
  if (body.length === 0) throw new GatewayError('invalid_request_error', 'Request body is empty: send a JSON object.');
  const json = asJson(() => JsonBody.parse(body));
  const checked = await checkBody(json, opts, endpoint).catch((err: Error) => err);
  // Invalid JSON anywhere is the answer, whatever else is wrong: as if the body were parsed whole first.
  asJson(() => json.verify());
  if (checked instanceof Error) throw checked;
  return checked;
}

async function checkBody(json: JsonBody, opts: ValidateOptions, endpoint: 'messages' | 'count_tokens'): Promise<ValidatedBody> {
  const data = parseOr400(endpoint === 'messages' ? MessagesBody : CountTokensBody, json.value);
  await checkDocuments(data.messages, opts, json);
  return { model: json.text(data.model), stream: 'stream' in data && data.stream === true };
}

const SPLIT_HINT = 'Split it with summarizePdf() or pdf.split() from @keygate/sdk';

async function checkDocuments(messages: z.infer<typeof Message>[], opts: ValidateOptions, json: JsonBody): Promise<void> {
  let totalPages = 0;
  for (const [i, m] of messages.entries()) {
    if (typeof m.content === 'string') continue;
    for (const [j, block] of m.content.entries()) {
      if (block.type !== 'document') continue;
      const source = block.source as { type?: unknown; media_type?: unknown; data?: unknown } | undefined;
      if (source?.type !== 'base64' || source.media_type !== 'application/pdf') continue;
      const where = `messages[${i}].content[${j}]`;
      const bytes = typeof source.data === 'string' ? json.base64(source.data) : null;
      if (!bytes) throw new GatewayError('invalid_request_error', `${where}.source.data: not valid base64.`);
      const info = await inspectPdfFully(bytes);
      if (!info.isPdf) throw new GatewayError('invalid_request_error', `${where}: the document is not a PDF (media_type is application/pdf, but the data has no PDF header).`);
      if (info.encrypted) throw new GatewayError('invalid_request_error', `${where}: encrypted PDFs are not supported. Remove the password and send it again.`);
      if (info.pages === null) continue;
      if (info.pages > opts.maxPdfPages) {
        throw new GatewayError('invalid_request_error', `${where}: the PDF has ${info.pages} pages; the limit is ${opts.maxPdfPages} pages per request. ${SPLIT_HINT}.`);
      }
      totalPages += info.pages;
    }
  }
  if (totalPages > opts.maxPdfPages) {
    throw new GatewayError('invalid_request_error', `The request's PDFs have ${totalPages} pages in all; the limit is ${opts.maxPdfPages} pages per request. ${SPLIT_HINT}.`);
  }
}
