import { decodeBase64Strict } from '@keygate/pdf';
import { isAscii, isUtf8 } from 'node:buffer';
import { randomBase62 } from '../lib/ids';
import { JsonScan } from './json-scan';

const BACKSLASH = 0x5c;
const EQUALS = 0x3d;
/**
 * Strings at least this long stay in the body's bytes instead of becoming JS strings. The
 * gateway compares parsed strings with short names only (`file_id`, `document`,
 * `application/pdf`, `anthropic`): a string of this many bytes, even written all in `\uXXXX`
 * escapes (6 bytes a character), is over 170 characters, so its token never equals one.
 */
export const LONG_STRING = 1024;
/**
 * Bodies below this are parsed whole. Above, the body never becomes one JS string: V8 puts a
 * string over 128 KB in its large-object space, and making one per call (Latin-1 or UTF-8) cost
 * more CPU than parsing it (3-4 ms at 600 KB on these machines, in page faults and collections).
 */
export const LARGE_BODY = 96 * 1024;
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
 * JSON validity of a long string is checked when it is read, and throws what JSON.parse
 * throws for the whole body. One nothing reads is left unchecked: the scan found its quotes,
 * so what lies between them cannot change the structure; the provider judges it.
 */
export class JsonBody {
  /** The parsed body. Its strings may be read as Latin-1: compare them with ASCII text only, and read them with `text()`. */
  readonly value: unknown;
  /**
   * The bytes the parse read: the body itself, or past LARGE_BODY with its long strings cut out
   * (each a short token). A search for a field name or a short value needs only these.
   */
  readonly structure: Buffer;
  readonly #body: Buffer;
  readonly #long: Map<string, LongString>;
  readonly #latin1: boolean;

  private constructor(
    body: Buffer,
    value: unknown,
    long: Map<string, LongString>,
    latin1: boolean,
    structure = body,
  ) {
    this.#body = body;
    this.structure = structure;
    this.value = value;
    this.#long = long;
    this.#latin1 = latin1;
  }

  /**
   * `longStrings`: where the strings of at least LONG_STRING bytes lie (start and end offsets
   * between the quotes, as boundJsonNotingLongStrings notes them), so the body is not scanned
   * again; without it, a large body is scanned here. `skip`: members of the top-level object the
   * parse may leave out (see Skip).
   */
  static parse(body: Buffer, opts: { longStrings?: readonly number[]; skip?: Skip | null } = {}): JsonBody {
    const extents = body.length < LARGE_BODY ? [] : (opts.longStrings ?? longStringsOf(body));
    if (extents.length === 0) {
      const text = body.toString('latin1');
      return JsonBody.#whole(body, readsAsLatin1(body, text) ? text : null);
    }
    // The skeleton is cut from the bytes into one buffer: the long strings are not copied, and
    // each stands as its token, a JSON string of ASCII (`"\u0000kg<nonce>:<n>"`).
    const nonce = `\u0000kg${randomBase62(16)}:`;
    const quoted = `"\\u0000${nonce.slice(1)}`;
    const long = new Map<string, LongString>();
    let size = body.length;
    for (let i = 0; i < extents.length; i += 2) size -= extents[i + 1]! - extents[i]! + 2;
    const tokens = extents.length / 2;
    size += tokens * (quoted.length + 1) + digitsUpTo(tokens);
    const skeleton = Buffer.allocUnsafe(size);
    // Where each token's quote sits in the skeleton, and where body and skeleton go on after it.
    const cuts: Cuts = { tokenAt: [], bodyAfter: [], skeletonAfter: [] };
    let copied = 0;
    let at = 0;
    for (let i = 0; i < extents.length; i += 2) {
      const start = extents[i]!;
      const end = extents[i + 1]!;
      const n = long.size;
      long.set(nonce + n, { start, end, checked: false, escaped: false });
      at += body.copy(skeleton, at, copied, start - 1);
      cuts.tokenAt.push(at);
      at += skeleton.write(`${quoted}${n}"`, at, 'latin1');
      copied = end + 1;
      cuts.bodyAfter.push(copied);
      cuts.skeletonAfter.push(at);
    }
    at += body.copy(skeleton, at, copied);
    if (at !== size) throw new Error(`skeleton of ${at} bytes, ${size} expected`);
    // Only the skeleton's strings are read from the parse (the long ones from the bytes, as UTF-8),
    // so only the skeleton needs to read as Latin-1 as it does as UTF-8. The cuts fall on quotes,
    // never inside a UTF-8 sequence.
    const asLatin1 = readsAsLatin1(skeleton, null);
    const encoding = asLatin1 ? 'latin1' : 'utf8';
    let value: unknown;
    try {
      const text = opts.skip ? withoutSkipped(body, skeleton, cuts, opts.skip, encoding) : null;
      value = JSON.parse(text ?? skeleton.toString(encoding));
    } catch {
      return JsonBody.#whole(body, readsAsLatin1(body, null) ? body.toString('latin1') : null);
    }
    return new JsonBody(body, value, long, asLatin1, skeleton);
  }

  /** `text`: the body read as Latin-1 when that parses as its UTF-8 does (readsAsLatin1), else null. */
  static #whole(body: Buffer, text: string | null): JsonBody {
    if (text !== null) {
      try {
        return new JsonBody(body, JSON.parse(text), new Map(), true);
      } catch {
        // Parsed again below as UTF-8, so the error names what the client sent.
      }
    }
    return new JsonBody(body, JSON.parse(body.toString('utf8')), new Map(), false);
  }

  /** The string a value stands for: itself, or the long string its token names. */
  text(value: string): string {
    const s = this.#long.get(value);
    if (!s) return this.#latin1 && LATIN1_HIGH.test(value) ? value.replace(LATIN1_RUNS, utf8Of) : value;
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

  #check(s: LongString): void {
    if (s.checked) return;
    if (s.end - s.start < SLICE) {
      // Short enough for one young string: V8's own parse checks its escapes and control characters.
      const backslash = this.#body.indexOf(BACKSLASH, s.start);
      s.escaped = backslash !== -1 && backslash < s.end;
      try {
        JSON.parse(this.#body.toString('latin1', s.start - 1, s.end + 1));
      } catch {
        this.#invalid();
      }
      s.checked = true;
      return;
    }
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

/**
 * Members of a body's top-level object that its reader never looks into except for a few words
 * (a `file_id`, a `document`): the parse may leave such a member out, an empty array or object
 * standing for it, when its structure (its bytes but its long strings) holds none of those words
 * and no `\u` escape that could spell one. A messages body's history is 80% of its structure
 * and most of its parse.
 */
export interface Skip {
  /** The top-level object's array and object members, brackets included (JsonScan.topSpans). */
  spans: readonly number[];
  /** The members that may be left out, by name (written without escapes). */
  keys: readonly string[];
  /** A member holding any of these (as a JSON string's content, without escapes) is parsed. */
  unless: readonly Buffer[];
}

interface Cuts {
  tokenAt: number[];
  bodyAfter: number[];
  skeletonAfter: number[];
}

const ESCAPE_U = Buffer.from('\\u');
const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** The skeleton as JSON.parse is to read it, the members `skip` allows left out; null when none is. */
function withoutSkipped(
  body: Buffer,
  skeleton: Buffer,
  cuts: Cuts,
  skip: Skip,
  encoding: 'latin1' | 'utf8',
): string | null {
  let text = '';
  let from = 0;
  let cut = 0;
  const { spans } = skip;
  for (let i = 0; i < spans.length; i += 2) {
    const start = spans[i]!;
    const end = spans[i + 1]!;
    if (!skipsMember(body, start, skip.keys)) continue;
    // Spans and cuts are both in order: the last cut before each bracket places it in the skeleton.
    while (cut < cuts.bodyAfter.length && cuts.bodyAfter[cut]! <= start) cut++;
    const s = cut === 0 ? start : cuts.skeletonAfter[cut - 1]! + (start - cuts.bodyAfter[cut - 1]!);
    let last = cut;
    while (last < cuts.bodyAfter.length && cuts.bodyAfter[last]! <= end) last++;
    const e = last === 0 ? end : cuts.skeletonAfter[last - 1]! + (end - cuts.bodyAfter[last - 1]!);
    const member = skeleton.subarray(s, e + 1);
    if (skip.unless.some((word) => member.includes(word))) continue;
    if (!onlyTokenEscapes(member, s, cuts.tokenAt, cut, last)) continue;
    text += skeleton.toString(encoding, from, s) + (body[start] === 0x5b ? '[]' : '{}');
    from = e + 1;
  }
  return from === 0 ? null : text + skeleton.toString(encoding, from);
}

/** Whether the bracket at `at` opens the value of a member named one of `keys`: `"key"` then `:`. */
function skipsMember(body: Buffer, at: number, keys: readonly string[]): boolean {
  let j = at - 1;
  while (j >= 0 && SPACE.has(body[j]!)) j--;
  if (body[j] !== 0x3a) return false;
  j--;
  while (j >= 0 && SPACE.has(body[j]!)) j--;
  for (const key of keys) {
    const open = j - key.length - 1;
    if (open < 1 || body[open] !== 0x22 || body.toString('latin1', open + 1, j) !== key) continue;
    // The key's own opening quote: a `{` or `,` before it, never a backslash.
    let k = open - 1;
    while (k >= 0 && SPACE.has(body[k]!)) k--;
    return body[k] === 0x7b || body[k] === 0x2c;
  }
  return false;
}

/** Whether every `\u` in `member` (at `offset` in the skeleton) is a token's, tokens `from` to `to`. */
function onlyTokenEscapes(
  member: Buffer,
  offset: number,
  tokenAt: number[],
  from: number,
  to: number,
): boolean {
  let k = from;
  for (let hit = member.indexOf(ESCAPE_U); hit !== -1; hit = member.indexOf(ESCAPE_U, hit + 1)) {
    // A token is `"\u0000kg…"`: its escape is one byte after its quote.
    while (k < to && tokenAt[k]! + 1 < offset + hit) k++;
    if (k >= to || tokenAt[k]! + 1 !== offset + hit) return false;
  }
  return true;
}

/**
 * Whether the body parses the same read as Latin-1 as read as UTF-8 (the string it decodes to is
 * built at a third of the cost, one byte per character, and parses faster): JSON's syntax is
 * ASCII, so the two parses succeed or fail alike and differ only in the strings. With valid UTF-8
 * and no `\u0080`–`\u00ff` escape, characters U+0080–U+00FF in a Latin-1 string come only from
 * the bytes of UTF-8 sequences, so each string maps back to exactly one UTF-8 reading (`text()`),
 * and two strings (object keys included) are equal in one reading exactly when they are in the other.
 */
function readsAsLatin1(body: Buffer, text: string | null): boolean {
  if (isAscii(body)) return true;
  if (!isUtf8(body)) return false;
  // On the text when there is one: V8's search is the faster.
  const find =
    text === null
      ? (from: number) => body.indexOf(ESCAPE_00, from)
      : (from: number) => text.indexOf(ESCAPE_00, from);
  for (let at = find(0); at !== -1; at = find(at + 1)) {
    const c = body[at + 4];
    if (c !== undefined && (HEX_8_TO_F.has(c) || c === 0x38 || c === 0x39)) return false;
  }
  return true;
}

const ESCAPE_00 = '\\u00';
// a-f and A-F: the high nibble of an escape from \u0080 to \u00ff (with 8 and 9).
const HEX_8_TO_F = new Set([...'abcdefABCDEF'].map((c) => c.charCodeAt(0)));
const LATIN1_HIGH = /[\x80-\xff]/;
const LATIN1_RUNS = /[\x80-\xff]+/g;
const utf8Of = (run: string) => Buffer.from(run, 'latin1').toString('utf8');

/** The decimal digits of 0, 1, … n-1 written one after another. */
function digitsUpTo(n: number): number {
  let digits = 0;
  for (let width = 1, from = 0, to = 10; from < n; width++, from = to, to *= 10)
    digits += width * (Math.min(n, to) - from);
  return digits;
}

/** Start and end offsets (between the quotes) of the strings of at least LONG_STRING bytes. */
function longStringsOf(body: Buffer): number[] {
  const long: number[] = [];
  new JsonScan({ long, minLength: LONG_STRING }).scan(body, 0, body.length);
  return long;
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
