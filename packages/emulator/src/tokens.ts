import { decodeBase64Strict, inspectPdf } from '@keygate/pdf';
import { invalid } from './errors';
import type { Json, MessagesBody } from './types';
import { cacheControlOf, forEachUnit, withoutCacheControl, type Unit } from './units';
import { PER_TURN_CONTROL_BETA, validateMessages } from './validate';

export const TOKENS_PER_PDF_PAGE = 1_600;
export const TOKENS_PER_IMAGE = 1_000;
/** A document the emulator cannot read (url or file source) costs one page. */
export const TOKENS_PER_REMOTE_DOCUMENT = 1_600;
export const TOKENS_PER_MESSAGE = 10;
export const MAX_PDF_PAGES = 100;
export const MAX_CACHE_BREAKPOINTS = 4;

export type CacheTtl = '5m' | '1h';

export interface Breakpoint {
  /** Tokens of the prefix that ends with this unit. */
  tokens: number;
  ttl: CacheTtl;
  /** Position of the unit in `forEachUnit` order. */
  unit: number;
}

export interface Measurement {
  total: number;
  breakpoints: Breakpoint[];
}

/** Running sums while walking the prompt; `tokens()` applies the rule to what was seen so far. */
class Tally {
  bytes = 0;
  fixed = 0;
  pdfPages = 0;
  tokens(): number {
    return Math.ceil(this.bytes / 4) + this.fixed;
  }
}

/**
 * The emulator's token rule (deterministic, not the provider's tokenizer):
 *
 *   input tokens = ceil(UTF-8 bytes of all text / 4)
 *                + 1,600 per page of each base64 PDF document
 *                + 1,000 per image block
 *                + 1,600 per url/file document (unreadable offline)
 *                + 10 per message
 *
 * "All text" is: system text; text blocks; tool_result content (recursively); tool_use and
 * server_tool_use inputs as JSON; thinking text; text-source and content-source documents;
 * each tool definition as JSON (without `cache_control`); any other block as JSON.
 * Throws an `invalid_request_error` for a PDF the provider would refuse (bad base64, not a
 * PDF, encrypted, more than 100 pages in the request).
 */
export function countTokens(body: TokenCountable): number {
  return measure(
    validateMessages({ model: 'count', ...body }, 'count_tokens', new Set([PER_TURN_CONTROL_BETA])),
  ).total;
}

/** What `countTokens` reads; the SDK's `MessageCreateParams` fits. */
export interface TokenCountable {
  messages: readonly object[];
  system?: string | readonly object[];
  tools?: readonly object[];
}

/** Counts the prompt and notes the token position of each `cache_control` breakpoint. */
export function measure(body: MessagesBody): Measurement {
  const tally = new Tally();
  const breakpoints: Breakpoint[] = [];
  let index = 0;
  forEachUnit(body, (unit) => {
    addUnit(unit, tally);
    const control = cacheControlOf(unit);
    if (control !== undefined && control !== null) {
      breakpoints.push({
        tokens: tally.tokens(),
        ttl: ttlOf(control, `${unit.path}.cache_control`),
        unit: index,
      });
    }
    index++;
  });
  if (tally.pdfPages > MAX_PDF_PAGES) {
    throw invalid(`messages: A maximum of ${MAX_PDF_PAGES} PDF pages may be provided.`);
  }
  const total = tally.tokens();
  // Top-level cache_control ("automatic caching") puts a breakpoint after the last unit.
  if (body.cache_control != null && index > 0 && breakpoints[breakpoints.length - 1]?.unit !== index - 1) {
    breakpoints.push({ tokens: total, ttl: ttlOf(body.cache_control, 'cache_control'), unit: index - 1 });
  }
  if (breakpoints.length > MAX_CACHE_BREAKPOINTS) {
    throw invalid(
      `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints.length}.`,
    );
  }
  return { total, breakpoints };
}

function ttlOf(control: unknown, path: string): CacheTtl {
  if (typeof control !== 'object' || control === null || (control as Json).type !== 'ephemeral') {
    throw invalid(`${path}.type: Input should be 'ephemeral'`);
  }
  const ttl = (control as Json).ttl;
  if (ttl === undefined || ttl === '5m') return '5m';
  if (ttl === '1h') return '1h';
  throw invalid(`${path}.ttl: Input should be '5m' or '1h'`);
}

function addUnit(unit: Unit, tally: Tally): void {
  switch (unit.kind) {
    case 'tool':
      tally.bytes += Buffer.byteLength(JSON.stringify(withoutCacheControl(unit.value)));
      return;
    case 'message':
      tally.fixed += TOKENS_PER_MESSAGE;
      return;
    case 'system':
    case 'content':
      if (typeof unit.value === 'string') tally.bytes += Buffer.byteLength(unit.value);
      else addBlock(unit.value, unit.path, tally);
  }
}

function addBlock(block: Json, path: string, tally: Tally): void {
  switch (block.type) {
    case 'text':
      tally.bytes += textBytes(block.text);
      return;
    case 'image':
      tally.fixed += TOKENS_PER_IMAGE;
      return;
    case 'document':
      addDocument(block, path, tally);
      return;
    case 'tool_use':
    case 'server_tool_use':
      tally.bytes += Buffer.byteLength(JSON.stringify(block.input ?? {}));
      return;
    case 'tool_result':
      addContent(block.content, `${path}.content`, tally);
      return;
    case 'thinking':
      tally.bytes += textBytes(block.thinking);
      return;
    case 'redacted_thinking':
      tally.bytes += textBytes(block.data);
      return;
    default:
      tally.bytes += Buffer.byteLength(JSON.stringify(withoutCacheControl(block)));
  }
}

function addContent(content: unknown, path: string, tally: Tally): void {
  if (typeof content === 'string') {
    tally.bytes += Buffer.byteLength(content);
  } else if (Array.isArray(content)) {
    for (let i = 0; i < content.length; i++) {
      const item: unknown = content[i];
      if (typeof item === 'object' && item !== null) addBlock(item as Json, `${path}.${i}`, tally);
    }
  }
}

function addDocument(block: Json, path: string, tally: Tally): void {
  const source = block.source as Json | undefined;
  switch (source?.type) {
    case 'base64': {
      if (source.media_type !== 'application/pdf') {
        throw invalid(`${path}.source.base64.media_type: Input should be 'application/pdf'`);
      }
      const pages = pdfPages(source.data, `${path}.source.base64.data`);
      tally.pdfPages += pages;
      tally.fixed += pages * TOKENS_PER_PDF_PAGE;
      return;
    }
    case 'text':
      tally.bytes += textBytes(source.data);
      return;
    case 'content':
      addContent(source.content, `${path}.source.content`, tally);
      return;
    case 'url':
    case 'file':
      tally.fixed += TOKENS_PER_REMOTE_DOCUMENT;
      return;
    default:
      throw invalid(
        `${path}.source: Input tag '${String(source?.type)}' found using 'type' does not match any of the expected tags: 'base64', 'text', 'content', 'url', 'file'`,
      );
  }
}

function pdfPages(data: unknown, path: string): number {
  const bytes = typeof data === 'string' ? decodeBase64Strict(data) : null;
  if (bytes === null) throw invalid(`${path}: The PDF specified was not valid base64.`);
  const info = inspectPdf(bytes);
  if (!info.isPdf || info.pages === null) throw invalid(`${path}: The PDF specified was not valid.`);
  if (info.encrypted) throw invalid(`${path}: The PDF specified is password protected.`);
  return info.pages;
}

const textBytes = (value: unknown): number => (typeof value === 'string' ? Buffer.byteLength(value) : 0);
