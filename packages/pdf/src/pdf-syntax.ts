// Just enough PDF syntax to read a few dictionaries straight out of the file bytes: the
// trailer, the catalog, the root page-tree node and object-stream headers. Nested values are
// skipped, not parsed.
import { latin1 } from './bytes';

export type PdfValue =
  | { type: 'ref'; num: number; gen: number }
  | { type: 'number'; value: number }
  | { type: 'name'; value: string }
  | { type: 'other' };

export type PdfDict = Map<string, PdfValue>;

/** Bytes that lexers sharing it may still read; they stop, as at the end of input, once it runs out. */
export type LexBudget = { bytes: number };

type Token =
  | { kind: 'number'; value: number; integer: boolean }
  | { kind: 'name'; value: string }
  | { kind: 'keyword'; value: string }
  | { kind: 'open'; value: '<<' | '[' }
  | { kind: 'close'; value: '>>' | ']' }
  | { kind: 'string' };

const PERCENT = 0x25;
const PAREN_OPEN = 0x28;
const PAREN_CLOSE = 0x29;
const SLASH = 0x2f;
const LESS = 0x3c;
const GREATER = 0x3e;
const BRACKET_OPEN = 0x5b;
const BACKSLASH = 0x5c;
const BRACKET_CLOSE = 0x5d;

const WHITESPACE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIMITERS = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)$/;
const INTEGER = /^[+-]?\d+$/;

export function isRegular(byte: number | undefined): boolean {
  return byte !== undefined && !WHITESPACE.has(byte) && !DELIMITERS.has(byte);
}

export function isWhitespace(byte: number | undefined): boolean {
  return byte !== undefined && WHITESPACE.has(byte);
}

export class PdfLexer {
  private limit = 0;

  constructor(
    private readonly bytes: Uint8Array,
    public pos: number,
    private readonly budget: LexBudget = { bytes: Number.POSITIVE_INFINITY },
  ) {}

  next(): Token | null {
    const from = this.pos;
    this.limit = Math.min(this.bytes.length, from + Math.max(0, this.budget.bytes));
    const token = this.read();
    this.budget.bytes -= this.pos - from;
    return token;
  }

  /** Reads `<< … >>` at the current position, keeping only its top-level entries. */
  readDict(): PdfDict | null {
    const open = this.next();
    if (open?.kind !== 'open' || open.value !== '<<') return null;
    const dict: PdfDict = new Map();
    for (;;) {
      const key = this.next();
      if (key === null) return null;
      if (key.kind === 'close' && key.value === '>>') return dict;
      if (key.kind !== 'name') return null;
      const value = this.readValue();
      if (value === null) return null;
      dict.set(key.value, value);
    }
  }

  /** Reads `num gen obj` and returns the object number and generation. */
  readObjectHeader(): { num: number; gen: number } | null {
    const num = this.next();
    const gen = this.next();
    const keyword = this.next();
    if (num?.kind !== 'number' || !num.integer || gen?.kind !== 'number' || !gen.integer) return null;
    return keyword?.kind === 'keyword' && keyword.value === 'obj' ? { num: num.value, gen: gen.value } : null;
  }

  private read(): Token | null {
    this.skipWhitespaceAndComments();
    const start = this.pos;
    const byte = this.byteAt(start);
    if (byte === undefined) return null;
    switch (byte) {
      case SLASH:
        this.pos += 1;
        return { kind: 'name', value: decodeName(this.readRegular()) };
      case BRACKET_OPEN:
        this.pos += 1;
        return { kind: 'open', value: '[' };
      case BRACKET_CLOSE:
        this.pos += 1;
        return { kind: 'close', value: ']' };
      case LESS:
        if (this.byteAt(start + 1) === LESS) {
          this.pos += 2;
          return { kind: 'open', value: '<<' };
        }
        return this.skipHexString();
      case GREATER:
        if (this.byteAt(start + 1) !== GREATER) return null;
        this.pos += 2;
        return { kind: 'close', value: '>>' };
      case PAREN_OPEN:
        return this.skipLiteralString();
    }
    const text = this.readRegular();
    if (text === '') return null;
    if (NUMBER.test(text)) return { kind: 'number', value: Number(text), integer: INTEGER.test(text) };
    return { kind: 'keyword', value: text };
  }

  private readValue(): PdfValue | null {
    const token = this.next();
    if (token === null) return null;
    switch (token.kind) {
      case 'name':
        return { type: 'name', value: token.value };
      case 'number': {
        const gen = token.integer ? this.tryReadRefTail() : null;
        return gen === null ? { type: 'number', value: token.value } : { type: 'ref', num: token.value, gen };
      }
      case 'open':
        return this.skipContainer() ? { type: 'other' } : null;
      case 'close':
        return null;
      default:
        return { type: 'other' };
    }
  }

  /** After an integer: consumes `gen R` and returns gen, or rewinds and returns null. */
  private tryReadRefTail(): number | null {
    const saved = this.pos;
    const gen = this.next();
    const r = this.next();
    if (gen?.kind === 'number' && gen.integer && r?.kind === 'keyword' && r.value === 'R') return gen.value;
    this.pos = saved;
    return null;
  }

  private skipContainer(): boolean {
    for (let depth = 1; depth > 0; ) {
      const token = this.next();
      if (token === null) return false;
      if (token.kind === 'open') depth += 1;
      if (token.kind === 'close') depth -= 1;
    }
    return true;
  }

  private byteAt(index: number): number | undefined {
    return index < this.limit ? this.bytes[index] : undefined;
  }

  private skipWhitespaceAndComments(): void {
    for (;;) {
      const byte = this.byteAt(this.pos);
      if (isWhitespace(byte)) {
        this.pos += 1;
      } else if (byte === PERCENT) {
        while (this.pos < this.limit && this.bytes[this.pos] !== 0x0a && this.bytes[this.pos] !== 0x0d)
          this.pos += 1;
      } else {
        return;
      }
    }
  }

  private readRegular(): string {
    const start = this.pos;
    while (isRegular(this.byteAt(this.pos))) this.pos += 1;
    return latin1(this.bytes, start, this.pos);
  }

  private skipHexString(): Token | null {
    const end = this.bytes.indexOf(GREATER, this.pos + 1);
    if (end === -1 || end >= this.limit) return null;
    this.pos = end + 1;
    return { kind: 'string' };
  }

  private skipLiteralString(): Token | null {
    for (let depth = 0; this.pos < this.limit; this.pos += 1) {
      const byte = this.bytes[this.pos];
      if (byte === BACKSLASH) this.pos += 1;
      else if (byte === PAREN_OPEN) depth += 1;
      else if (byte === PAREN_CLOSE && --depth === 0) {
        this.pos += 1;
        return { kind: 'string' };
      }
    }
    return null;
  }
}

// Names may escape any byte as #xx (PDF 1.2+), e.g. /Ty#70e is /Type.
function decodeName(raw: string): string {
  if (!raw.includes('#')) return raw;
  return raw.replace(/#([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
