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
// enough that each slice's string dies young (larger ones go to V8's large-object space and
// piled up to the body's size before a GC freed them).
const CHUNK = 64 * 1024;
const CONTROL = /[\x00-\x1f]/;
const BASE64_OUTSIDE = /[^A-Za-z0-9+/=]/;

interface LongString {
  /** Between the quotes. */
  start: number;
  end: number;
  /** Holds backslash escapes: its value differs from its bytes. */
  escaped: boolean;
  /** Holds only base64 alphabet characters. */
  base64: boolean;
}

/**
 * A JSON request body parsed without copying its long strings. A 30 MB PDF request was
 * copied four times on the way to validation (chunks, concatenation, UTF-8 string, parsed
 * string) before its base64 was decoded: here the long strings are found with native
 * indexOf, checked in 64 KB slices, and stand in the parsed value as unguessable tokens
 * that `bytes()` and `text()` resolve.
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

  /** Parses `body`; throws what JSON.parse throws for invalid JSON. */
  static parse(body: Buffer): JsonBody {
    if (body.length < LARGE_BODY) return new JsonBody(body, JSON.parse(body.toString('utf8')), new Map());
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
        const found = scan(body, open + 1, close);
        if (!found) return new JsonBody(body, JSON.parse(body.toString('utf8')), new Map());
        long.set(token, found);
        pieces.push(body.subarray(copied, open), Buffer.from(JSON.stringify(token)));
        copied = close + 1;
      }
      pos = close + 1;
    }
    if (long.size === 0) return new JsonBody(body, JSON.parse(body.toString('utf8')), long);
    pieces.push(body.subarray(copied));
    let value: unknown;
    try {
      value = JSON.parse(Buffer.concat(pieces).toString('utf8'));
    } catch {
      // The error message (and its position) must describe the body the client sent.
      value = JSON.parse(body.toString('utf8'));
    }
    return new JsonBody(body, value, long);
  }

  /** The string a value stands for: itself, or the long string its token names. */
  text(value: string): string {
    const s = this.#long.get(value);
    if (!s) return value;
    return s.escaped ? JSON.parse(this.#body.toString('utf8', s.start - 1, s.end + 1)) : this.#body.toString('utf8', s.start, s.end);
  }

  /** Decodes strict, padded base64 (as decodeBase64Strict does) without copying the string first; null when invalid. */
  base64(value: string): Buffer | null {
    const s = this.#long.get(value);
    if (!s) return decodeBase64Strict(value);
    if (s.escaped) return decodeBase64Strict(this.text(value));
    if (!s.base64) return null;
    const length = s.end - s.start;
    if (length % 4 !== 0) return null;
    const firstPad = this.#body.indexOf(EQUALS, s.start);
    const padding = firstPad === -1 || firstPad >= s.end ? 0 : s.end - firstPad;
    if (padding > 2 || (padding === 2 && this.#body[s.end - 1] !== EQUALS)) return null;
    const out = Buffer.allocUnsafe((length / 4) * 3);
    let written = 0;
    for (let at = s.start; at < s.end; at += CHUNK) {
      written += out.write(this.#body.toString('latin1', at, Math.min(at + CHUNK, s.end)), written, 'base64');
    }
    return written === out.length - padding ? out.subarray(0, written) : null;
  }
}

/** Checks a long string in slices: null when it is not a valid JSON string (a raw control character). */
function scan(body: Buffer, start: number, end: number): LongString | null {
  let escaped = false;
  let base64 = true;
  for (let at = start; at < end; at += CHUNK) {
    const slice = body.toString('latin1', at, Math.min(at + CHUNK, end));
    if (base64 && !BASE64_OUTSIDE.test(slice)) continue;
    base64 = false;
    if (escaped) continue;
    if (CONTROL.test(slice)) return null;
    escaped = slice.includes('\\');
  }
  if (escaped) {
    try {
      JSON.parse(body.toString('utf8', start - 1, end + 1));
    } catch {
      return null;
    }
  }
  return { start, end, escaped, base64 };
}

function isEscaped(body: Buffer, quote: number): boolean {
  let backslashes = 0;
  for (let i = quote - 1; i >= 0 && body[i] === BACKSLASH; i--) backslashes++;
  return backslashes % 2 === 1;
}
