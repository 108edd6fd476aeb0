import { decodeBase64Strict } from '@keygate/pdf';
import { randomBase62 } from '../lib/ids';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const EQUALS = 0x3d;
/** Strings at least this long stay in the body's bytes instead of becoming JS strings. */
export const LONG_STRING = 64 * 1024;
/** Bodies below this are parsed whole: the scan only pays off when there is a lot to skip. */
export const LARGE_BODY = 1024 * 1024;
// A multiple of 4, so base64 decodes slice by slice exactly as it would whole; and small
// enough that each slice's string dies young (1 MB slices went to V8's large-object space
// and piled up to the body's size before a GC freed them).
const SLICE = 64 * 1024;
const CONTROL = /[\x00-\x1f]/;
const BASE64_OUTSIDE = /[^A-Za-z0-9+/=]/;

interface LongString {
  /** Between the quotes. */
  start: number;
  end: number;
  /** Known to be a valid JSON string (checked lazily: a PDF's base64 is checked as it is decoded). */
  checked: boolean;
  /** Holds backslash escapes, so its value differs from its bytes (known once checked). */
  escaped: boolean;
}

/**
 * A JSON request body parsed without copying its long strings. A 30 MB PDF request was
 * copied four times on the way to validation (chunks, concatenation, UTF-8 string, parsed
 * string) before its base64 was decoded: here the long strings are found with native
 * indexOf and stand in the parsed value as unguessable tokens that `text()` and `base64()`
 * resolve; a PDF's base64 is checked and decoded in one pass over 64 KB slices.
 *
 * JSON validity of the long strings is checked when they are read, and `verify()` checks
 * the rest; both throw what JSON.parse throws for the whole body.
 */
export class JsonBody {
  readonly value: unknown;
  readonly #body: Buffer;
  readonly #long: Map<string, LongString>;

  private constructor(body: Buffer, value: unknown, long: Map<string, LongString>) {
    this.#body = body;
    this.value = value;
    this.#long = long;
  }

  static parse(body: Buffer): JsonBody {
    if (body.length < LARGE_BODY) return JsonBody.#whole(body);
    const nonce = `\u0000kg${randomBase62(16)}:`;
    const long = new Map<string, LongString>();
    const pieces: Buffer[] = [];
    let copied = 0;
    let pos = 0;
    for (;;) {
      const open = body.indexOf(QUOTE, pos);
      if (open === -1) break;
      let close = body.indexOf(QUOTE, open + 1);
      while (close !== -1 && isEscaped(body, close)) close = body.indexOf(QUOTE, close + 1);
      if (close === -1) break;
      if (close - open - 1 >= LONG_STRING) {
        const token = nonce + long.size;
        long.set(token, { start: open + 1, end: close, checked: false, escaped: false });
        pieces.push(body.subarray(copied, open), Buffer.from(JSON.stringify(token)));
        copied = close + 1;
      }
      pos = close + 1;
    }
    if (long.size === 0) return JsonBody.#whole(body);
    pieces.push(body.subarray(copied));
    let value: unknown;
    try {
      value = JSON.parse(Buffer.concat(pieces).toString('utf8'));
    } catch {
      return JsonBody.#whole(body);
    }
    return new JsonBody(body, value, long);
  }

  static #whole(body: Buffer): JsonBody {
    return new JsonBody(body, JSON.parse(body.toString('utf8')), new Map());
  }

  /** The string a value stands for: itself, or the long string its token names. */
  text(value: string): string {
    const s = this.#long.get(value);
    if (!s) return value;
    this.#check(s);
    return s.escaped
      ? JSON.parse(this.#body.toString('utf8', s.start - 1, s.end + 1))
      : this.#body.toString('utf8', s.start, s.end);
  }

  /** Decodes strict, padded base64 exactly as decodeBase64Strict does; null when it is not. */
  base64(value: string): Buffer | null {
    const s = this.#long.get(value);
    if (!s) return decodeBase64Strict(value);
    const decoded = s.escaped ? null : decodeSlices(this.#body, s.start, s.end);
    if (decoded) {
      // Only base64 characters: a valid JSON string without escapes.
      s.checked = true;
      return decoded;
    }
    this.#check(s);
    return s.escaped ? decodeBase64Strict(this.text(value)) : null;
  }

  /** The body's length in bytes. */
  get bytes(): number {
    return this.#body.length;
  }

  /** Checks the long strings nothing has read. */
  verify(): void {
    for (const s of this.#long.values()) this.#check(s);
  }

  #check(s: LongString): void {
    if (s.checked) return;
    for (let at = s.start; at < s.end; at += SLICE) {
      const slice = this.#body.toString('latin1', at, Math.min(at + SLICE, s.end));
      if (CONTROL.test(slice)) this.#invalid();
      if (slice.includes('\\')) s.escaped = true;
    }
    if (s.escaped) {
      try {
        JSON.parse(this.#body.toString('utf8', s.start - 1, s.end + 1));
      } catch {
        this.#invalid();
      }
    }
    s.checked = true;
  }

  /** Throws JSON.parse's own error for the body, so the message describes what the client sent. */
  #invalid(): never {
    JSON.parse(this.#body.toString('utf8'));
    throw new SyntaxError('invalid JSON string');
  }
}

/** Strict, padded base64 between `start` and `end`, checked and decoded slice by slice; null if not that. */
function decodeSlices(body: Buffer, start: number, end: number): Buffer | null {
  const length = end - start;
  if (length % 4 !== 0) return null;
  const firstPad = body.indexOf(EQUALS, start);
  const padding = firstPad === -1 || firstPad >= end ? 0 : end - firstPad;
  if (padding > 2 || (padding === 2 && body[end - 1] !== EQUALS)) return null;
  const out = Buffer.allocUnsafe((length / 4) * 3);
  let written = 0;
  for (let at = start; at < end; at += SLICE) {
    const slice = body.toString('latin1', at, Math.min(at + SLICE, end));
    if (BASE64_OUTSIDE.test(slice)) return null;
    written += out.write(slice, written, 'base64');
  }
  return written === out.length - padding ? out.subarray(0, written) : null;
}

/** Whether the quote at `quote` is escaped (an odd run of backslashes before it). */
export function isEscaped(body: Buffer, quote: number): boolean {
  let backslashes = 0;
  for (let i = quote - 1; i >= 0 && body[i] === BACKSLASH; i--) backslashes++;
  return backslashes % 2 === 1;
}
