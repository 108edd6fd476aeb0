/**
 * An estimate of the output tokens of a stream that ended before the provider's final
 * `message_delta` (the client left, the upstream cut, a timeout). The provider bills what it
 * generated before it saw the abort, but the only count it sent is message_start's (usually 1).
 *
 * Rule: output tokens ≈ ceil(UTF-8 bytes of the content forwarded / 3.5), where the content is
 * the decoded string of every `text_delta.text`, `thinking_delta.thinking` and
 * `input_json_delta.partial_json` (tool input). 3.5 is Anthropic's own rule of thumb for
 * Claude on English text; code and JSON run close to it. In bytes, a CJK character (3 bytes)
 * counts 0.86 token and a Cyrillic or accented letter (2 bytes) 0.57, near what BPE
 * tokenizers give those scripts. Not counted: `signature_delta` (an opaque check on the
 * thinking, not generated text), `citations_delta` (quotes of the prompt), and thinking the
 * provider generated but did not show (`display: "omitted"`).
 *
 * The forwarded content is a lower bound on what was generated (generation runs ahead of the
 * client), so the record takes max(provider's last count, estimate) and is marked estimated.
 */
import type { ProviderUsage } from './usage';

export const BYTES_PER_OUTPUT_TOKEN = 3.5;

export function estimateOutputTokens(contentBytes: number): number {
  return Math.ceil(contentBytes / BYTES_PER_OUTPUT_TOKEN);
}

/** What a stream told about its usage, as far as it got (a `TapResult` fits). */
export interface StreamUsageFacts {
  usage: ProviderUsage | null;
  complete: boolean;
  /** A message_delta carrying usage arrived: the provider's own final count. */
  deltaUsage: boolean;
  contentBytes: number;
}

/**
 * The usage to record for an answer: the provider's as it came, or, for a stream that ended
 * without its final message_delta, with `output_tokens` raised to the estimate (never lowered).
 */
export function settleUsage(facts: StreamUsageFacts): { usage: ProviderUsage | null; estimated: boolean } {
  const { usage } = facts;
  if (usage === null || facts.complete || facts.deltaUsage) return { usage, estimated: false };
  const reported =
    typeof usage.output_tokens === 'number' && Number.isFinite(usage.output_tokens) ? usage.output_tokens : 0;
  return {
    usage: { ...usage, output_tokens: Math.max(reported, estimateOutputTokens(facts.contentBytes)) },
    estimated: true,
  };
}

/** The delta field that carries generated content, by delta type. */
const CONTENT_FIELD: Record<string, string> = {
  text_delta: 'text',
  thinking_delta: 'thinking',
  input_json_delta: 'partial_json',
};

/** Content bytes of a parsed `content_block_delta` event (the slow path, for unusual layouts). */
export function deltaContentBytes(payload: { delta?: Record<string, unknown> }): number {
  const delta = payload.delta;
  const field = typeof delta?.type === 'string' ? CONTENT_FIELD[delta.type] : undefined;
  const value = field === undefined ? undefined : delta![field];
  return typeof value === 'string' ? encoder.encode(value).length : 0;
}

// Uint8Array and TextEncoder, not Buffer: the SDK runs this tap in every runtime the official SDK runs in.
const encoder = new TextEncoder();
const PREFIX = encoder.encode('{"type":"content_block_delta","index":');
const DELTA = encoder.encode(',"delta":{"type":"');
const CLOSE = encoder.encode('"}}');
const BACKSLASH = 0x5c;
/** Each content delta's type and the opening of its string, as the provider writes them. */
const OPENERS = Object.entries(CONTENT_FIELD).map(([type, field]) => encoder.encode(`${type}","${field}":"`));

/**
 * Content bytes of one `content_block_delta` data line in the layout the provider writes
 * (`{"type":"content_block_delta","index":N,"delta":{"type":T,FIELD:"…"}}`), read from the raw
 * bytes without decoding: the string's bytes minus what its JSON escapes add. Returns -1 for
 * anything else (other delta types, another layout): the caller parses those.
 */
export function scanDeltaLine(buf: Uint8Array, start: number, end: number): number {
  if (!matches(buf, start, end, PREFIX)) return -1;
  let at = start + PREFIX.length;
  while (at < end && buf[at]! >= 0x30 && buf[at]! <= 0x39) at++;
  if (!matches(buf, at, end, DELTA)) return -1;
  at += DELTA.length;
  if (!matches(buf, end - CLOSE.length, end, CLOSE)) return -1;
  for (const opener of OPENERS) {
    if (buf[at] === opener[0] && matches(buf, at, end - CLOSE.length, opener)) {
      return unescapedBytes(buf, at + opener.length, end - CLOSE.length);
    }
  }
  return -1;
}

/** UTF-8 bytes of a JSON string's value from its raw bytes (between the quotes). */
function unescapedBytes(buf: Uint8Array, from: number, to: number): number {
  let bytes = to - from;
  for (let i = from; i < to; i++) {
    if (buf[i] !== BACKSLASH) continue;
    if (buf[i + 1] === 0x75 /* u */) {
      const unit = Number.parseInt(
        String.fromCharCode(buf[i + 2]!, buf[i + 3]!, buf[i + 4]!, buf[i + 5]!),
        16,
      );
      // A surrogate half is 2 of its pair's 4 bytes.
      const utf8 = unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
      bytes -= 6 - utf8;
      i += 5;
    } else {
      bytes -= 1;
      i += 1;
    }
  }
  return bytes;
}

function matches(buf: Uint8Array, at: number, end: number, text: Uint8Array): boolean {
  if (at < 0 || end - at < text.length) return false;
  for (let i = 0; i < text.length; i++) if (buf[at + i] !== text[i]) return false;
  return true;
}
