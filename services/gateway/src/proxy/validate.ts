/**
 * The gateway refuses only what it must. It refuses: JSON that does not parse, a body that is
 * not an object, `model` / `max_tokens` / `messages` missing or of the wrong JSON type (a
 * string, a positive integer, an array), a model id its call log could not store, PDFs over its
 * limits, and, elsewhere, size limits, bad group ids, auth and admission. Roles, block types,
 * unknown fields and all their values are the provider's to judge and go upstream byte for
 * byte: the provider's schema changes every few weeks, and real clients (Claude Code first)
 * send roles, blocks and fields this gateway has never seen.
 */
import { inspectPdfFully } from '@keygate/pdf';
import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import { JsonBody } from './json-body';

const MessagesBody = z.looseObject({
  model: z.string(),
  max_tokens: z.number().int().positive(),
  messages: z.array(z.unknown()),
});
const CountTokensBody = MessagesBody.omit({ max_tokens: true });

// The model id is the one value the gateway keeps: in the call log, and in the rollups' unique
// key. PostgreSQL's text cannot hold \u0000 (one such record would make its whole batch
// unwritable, holding back every record after it), and a btree key has a size cap, which 256
// characters (at most 1 KB of UTF-8) stay well under. Anything else in a model id is the
// provider's to refuse.
const MAX_MODEL_CHARS = 256;

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
    throw new GatewayError(
      'invalid_request_error',
      `Request body is not valid JSON: ${(err as Error).message}`,
    );
  }
}

export async function validateMessagesBody(
  body: Buffer,
  opts: ValidateOptions,
  endpoint: 'messages' | 'count_tokens' = 'messages',
): Promise<ValidatedBody> {
  if (body.length === 0)
    throw new GatewayError('invalid_request_error', 'Request body is empty: send a JSON object.');
  const json = asJson(() => JsonBody.parse(body));
  const checked = await checkBody(json, opts, endpoint).catch((err: Error) => err);
  // Invalid JSON anywhere is the answer, whatever else is wrong: as if the body were parsed whole first.
  asJson(() => json.verify());
  if (checked instanceof Error) throw checked;
  return checked;
}

async function checkBody(
  json: JsonBody,
  opts: ValidateOptions,
  endpoint: 'messages' | 'count_tokens',
): Promise<ValidatedBody> {
  if (typeof json.value !== 'object' || json.value === null || Array.isArray(json.value)) {
    throw new GatewayError('invalid_request_error', 'Request body must be a JSON object.');
  }
  const data = parseOr400(endpoint === 'messages' ? MessagesBody : CountTokensBody, json.value, {
    nul: 'allow',
  });
  const model = json.text(data.model);
  if (model.includes('\u0000'))
    throw new GatewayError('invalid_request_error', 'model: must not contain NUL characters.');
  if (model.length > MAX_MODEL_CHARS)
    throw new GatewayError('invalid_request_error', `model: must be at most ${MAX_MODEL_CHARS} characters.`);
  await checkDocuments(data.messages, opts, json);
  return { model, stream: data.stream === true };
}

const SPLIT_HINT = 'Split it with summarizePdf() or pdf.split() from @keygate/sdk';

interface Node {
  value: unknown;
  path: string;
}

/**
 * Every base64 PDF document in the messages, wherever it sits (any role, any block, nested in
 * tool results or blocks the gateway does not know), in document order. Iterative: JSON.parse
 * takes nesting far deeper than the call stack would.
 */
function* pdfDocuments(messages: unknown[]): Generator<{ where: string; data: unknown }> {
  const stack: Node[] = [{ value: messages, path: 'messages' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    const children: Node[] = [];
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) children.push({ value: item, path: `${path}[${i}]` });
    } else {
      const obj = value as Record<string, unknown>;
      const source = obj.source as Record<string, unknown> | null | undefined;
      if (obj.type === 'document' && source?.type === 'base64' && source.media_type === 'application/pdf') {
        yield { where: path, data: source.data };
        continue;
      }
      for (const [key, item] of Object.entries(obj)) children.push({ value: item, path: `${path}.${key}` });
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
}

async function checkDocuments(messages: unknown[], opts: ValidateOptions, json: JsonBody): Promise<void> {
  let totalPages = 0;
  for (const { where, data } of pdfDocuments(messages)) {
    const bytes = typeof data === 'string' ? json.base64(data) : null;
    if (!bytes) throw new GatewayError('invalid_request_error', `${where}.source.data: not valid base64.`);
    const info = await inspectPdfFully(bytes);
    if (!info.isPdf)
      throw new GatewayError(
        'invalid_request_error',
        `${where}: the document is not a PDF (media_type is application/pdf, but the data has no PDF header).`,
      );
    if (info.encrypted)
      throw new GatewayError(
        'invalid_request_error',
        `${where}: encrypted PDFs are not supported. Remove the password and send it again.`,
      );
    if (info.pages === null) continue;
    if (info.pages > opts.maxPdfPages) {
      throw new GatewayError(
        'invalid_request_error',
        `${where}: the PDF has ${info.pages} pages; the limit is ${opts.maxPdfPages} pages per request. ${SPLIT_HINT}.`,
      );
    }
    totalPages += info.pages;
  }
  if (totalPages > opts.maxPdfPages) {
    throw new GatewayError(
      'invalid_request_error',
      `The request's PDFs have ${totalPages} pages in all; the limit is ${opts.maxPdfPages} pages per request. ${SPLIT_HINT}.`,
    );
  }
}
