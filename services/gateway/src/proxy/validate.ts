/**
 * The gateway refuses only what it must. It refuses: JSON that does not parse (in a body over
 * LARGE_BODY, a `messages`, `system` or `tools` it has no need to read is left to the provider's
 * parser: SKIP), nesting and values past their bounds (everywhere), a body that is
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
import { setImmediate as nextTurn } from 'node:timers/promises';
import { BODY_RULES, type BodyRules } from '../pipeline/body-rules';
import { boundJsonNotingLongStrings } from '../pipeline/json-bounds';
import { JsonBody, LONG_STRING } from '../pipeline/json-body';

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
  /** What admission reserves from (0 for count_tokens, which has no max_tokens). */
  maxTokens: number;
  inputBytes: number;
  /** Pages of the PDFs in the messages (each counted at the page limit when unreadable). */
  pdfPages: number;
  /** The dearest cache write the body asks for (its `cache_control` lifetimes), or null for none. */
  cacheWrite: CacheWrite;
}

export type CacheWrite = '5m' | '1h' | null;

const CACHE_CONTROL = Buffer.from('"cache_control"');
const ONE_HOUR = Buffer.from('"1h"');

/**
 * Which cache write a body asks for, by a search of its bytes (no walk): none without a
 * `cache_control`, 1 hour when a `"1h"` follows one, else 5 minutes. Admission prices the input
 * it expects to be written at that rate; a stray "1h" elsewhere only prices it dearer. Given the
 * body's structure (JsonBody.structure), its long strings (a tool result, a PDF) are not searched.
 */
export function cacheWriteOf(body: Buffer): CacheWrite {
  const at = body.indexOf(CACHE_CONTROL);
  if (at < 0) return null;
  return body.indexOf(ONE_HOUR, at) >= 0 ? '1h' : '5m';
}

/**
 * What a messages body's reading looks for inside `messages`, `system` and `tools`: documents
 * (checkDocuments) and `file_id`s (surface/body-check.ts). A member whose structure names
 * neither is left out of the parse (JsonBody's Skip); a body naming one is parsed whole. A
 * member the endpoint's rules read a field of (a model or a reference, body-rules.ts) is
 * always parsed: a rule added there cannot be hidden by this.
 */
export function skippableMembers(rules: BodyRules): string[] {
  const ruled = new Set([...rules.models, ...rules.refs.map((r) => r.at)].map((at) => at.split(/[.[]/)[0]));
  return ['messages', 'system', 'tools'].filter((key) => !ruled.has(key));
}

const SKIP = {
  keys: skippableMembers(BODY_RULES['POST /v1/messages']!),
  unless: [Buffer.from('file_id'), Buffer.from('document')],
} as const;

export interface ValidateOptions {
  maxPdfPages: number;
}

const notJson = (err: Error) =>
  new GatewayError('invalid_request_error', `Request body is not valid JSON: ${err.message}`);

function asJson<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw notJson(err as Error);
  }
}

export async function validateMessagesBody(
  body: Buffer,
  opts: ValidateOptions,
  endpoint: 'messages' | 'count_tokens' = 'messages',
): Promise<ValidatedBody> {
  return (await readMessagesBody(body, opts, endpoint)).size;
}

/** Validates a messages body, and answers the parsed body with what admission needs to know of it. */
export async function readMessagesBody(
  body: Buffer,
  opts: ValidateOptions,
  endpoint: 'messages' | 'count_tokens' = 'messages',
): Promise<{ size: ValidatedBody; json: JsonBody }> {
  if (body.length === 0)
    throw new GatewayError('invalid_request_error', 'Request body is empty: send a JSON object.');
  // One pass bounds the body and finds its long strings, which the parse then leaves in the bytes,
  // and its top-level members, of which the parse leaves out those nothing here reads (SKIP).
  const { long, top } = await boundJsonNotingLongStrings(body, LONG_STRING);
  const json = asJson(() =>
    JsonBody.parse(body, { longStrings: long, skip: top && { spans: top, ...SKIP } }),
  );
  // A long string is checked as JSON when it is read (a model name, a PDF's base64). One nothing
  // reads is the provider's to judge: its content cannot change the body's structure (its quotes
  // were found by the scan), and checking every one cost more CPU than the rest of the reading.
  try {
    return { size: await checkBody(json, opts, endpoint), json };
  } catch (err) {
    throw err instanceof SyntaxError ? notJson(err) : err;
  }
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
  const pdfPages = await checkDocuments(data.messages, opts, json);
  const maxTokens = typeof data.max_tokens === 'number' ? data.max_tokens : 0;
  return {
    model,
    stream: data.stream === true,
    maxTokens,
    inputBytes: json.bytes,
    pdfPages,
    cacheWrite: cacheWriteOf(json.structure),
  };
}

const SPLIT_HINT = 'Split it with summarizePdf() or pdf.split() from @keygate/sdk';

interface Node {
  value: object;
  parent: Node | null;
  key: string | number;
}

// A walk of a large body lets the event loop turn this often (in nodes).
const TURN_NODES = 32_768;
const PAUSE = Symbol('pause');

/** `messages[0].content[2]`: built only when a document is found, so the walk keeps no strings. */
function pathOf(node: Node, json: JsonBody): string {
  const keys: (string | number)[] = [];
  for (let n: Node | null = node; n; n = n.parent) keys.push(n.key);
  let path = '';
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    path += typeof k === 'number' ? `[${k}]` : path ? `.${json.text(k)}` : k;
  }
  return path;
}

/**
 * Every base64 PDF document in the messages, wherever it sits (any role, any block, nested in
 * tool results or blocks the gateway does not know), in document order. Iterative, and
 * bounded by boundJson (depth and values); it pauses (PAUSE) so the caller can let the
 * event loop turn.
 */
function* pdfDocuments(
  messages: unknown[],
  json: JsonBody,
): Generator<{ where: string; data: unknown } | typeof PAUSE> {
  const stack: Node[] = [{ value: messages, parent: null, key: 'messages' }];
  let visited = 0;
  while (stack.length > 0) {
    const node = stack.pop()!;
    const value = node.value;
    if (++visited % TURN_NODES === 0) yield PAUSE;
    const from = stack.length;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (typeof item === 'object' && item !== null) stack.push({ value: item, parent: node, key: i });
      }
    } else {
      const obj = value as Record<string, unknown>;
      const source = obj.source as Record<string, unknown> | null | undefined;
      if (obj.type === 'document' && source?.type === 'base64' && source.media_type === 'application/pdf') {
        yield { where: pathOf(node, json), data: source.data };
        continue;
      }
      for (const key in obj) {
        const item = obj[key];
        if (typeof item === 'object' && item !== null) stack.push({ value: item, parent: node, key });
      }
    }
    // Children were pushed in order: reverse them so the first is visited first.
    for (let a = from, b = stack.length - 1; a < b; a++, b--) {
      const t = stack[a]!;
      stack[a] = stack[b]!;
      stack[b] = t;
    }
  }
}

/** Checks every PDF against the limits; answers their pages in all. */
async function checkDocuments(messages: unknown[], opts: ValidateOptions, json: JsonBody): Promise<number> {
  let totalPages = 0;
  let unknownPages = 0;
  for (const doc of pdfDocuments(messages, json)) {
    if (doc === PAUSE) {
      await nextTurn();
      continue;
    }
    const { where, data } = doc;
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
    if (info.pages === null) {
      // Pages unknown: admission reserves for a PDF at the page limit.
      unknownPages += opts.maxPdfPages;
      continue;
    }
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
  return totalPages + unknownPages;
}
