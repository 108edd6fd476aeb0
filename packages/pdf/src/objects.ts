import { indexOfText, lastIndexOfText } from './bytes';
import { inflateAtMost } from './inflate';
import { PdfLexer, isRegular, isWhitespace, type LexBudget, type PdfDict, type PdfValue } from './pdf-syntax';

export type PdfRef = { num: number; gen: number };

type ObjectStream = { data: Uint8Array; first: number; offsets: Map<number, number> };

// Bounds on the work of one inspection, so that hostile input cannot stall the gateway. The
// trailer, catalog, page-tree root and object-stream headers of a real file need far less.
const MAX_LEXED_BYTES = 8 * 1024 * 1024;
const MAX_INFLATED_BYTES = 64 * 1024 * 1024;
const MAX_FALSE_MATCHES = 100_000;
const MAX_TRAILER_CANDIDATES = 16;
const MAX_OBJECT_STREAMS = 10_000;
// An object stream's header sits just before its /Type key.
const OBJECT_HEADER_WINDOW = 1024;

/**
 * Finds dictionaries in a PDF's bytes without parsing the whole file. Like pdf-lib, it ignores
 * cross-reference offsets (often wrong in real files) and lets the definition that comes last in
 * the file win, counting an object stream's objects at the stream's position.
 */
export class PdfObjects {
  private readonly objectStreams = new Map<number, ObjectStream | null>();
  private readonly objectStreamTypes: number[] = [];
  private objectStreamSearchFrom: number;
  private readonly lexBudget: LexBudget = { bytes: MAX_LEXED_BYTES };
  private inflateBudget = MAX_INFLATED_BYTES;

  constructor(private readonly buf: Uint8Array) {
    this.objectStreamSearchFrom = buf.length;
  }

  /** The trailer `startxref` leads to, else the last `trailer` dictionary naming a catalog. */
  trailer(): PdfDict | null {
    const trailer = this.trailerAtStartxref();
    if (trailer?.has('Root')) return trailer;
    for (let from = this.buf.length, tries = 0; from >= 0 && tries < MAX_TRAILER_CANDIDATES; tries++) {
      const at = lastIndexOfText(this.buf, 'trailer', from);
      if (at === -1) break;
      from = at - 1;
      const dict = this.lexer(at + 'trailer'.length).readDict();
      if (dict?.has('Root')) return dict;
    }
    return trailer;
  }

  dict(ref: PdfRef): PdfDict | null {
    const direct = this.findUncompressed(ref);
    if (ref.gen === 0) {
      const compressed = this.findCompressed(ref.num, direct?.header ?? -1);
      if (compressed !== null) return compressed;
    }
    return direct === null ? null : this.lexer(direct.body).readDict();
  }

  private lexer(pos: number, bytes: Uint8Array = this.buf): PdfLexer {
    return new PdfLexer(bytes, pos, this.lexBudget);
  }

  private trailerAtStartxref(): PdfDict | null {
    const startxref = lastIndexOfText(this.buf, 'startxref');
    if (startxref === -1) return null;
    const lexer = this.lexer(startxref + 'startxref'.length);
    const offset = lexer.next();
    if (offset?.kind !== 'number' || !offset.integer || offset.value < 0 || offset.value >= this.buf.length)
      return null;

    lexer.pos = offset.value;
    const first = lexer.next();
    if (first?.kind === 'keyword' && first.value === 'xref') {
      const trailer = indexOfText(this.buf, 'trailer', offset.value);
      if (trailer === -1) return null;
      lexer.pos = trailer + 'trailer'.length;
      return lexer.readDict();
    }
    lexer.pos = offset.value;
    if (lexer.readObjectHeader() === null) return null;
    const dict = lexer.readDict();
    return isName(dict?.get('Type'), 'XRef') ? dict : null;
  }

  private findUncompressed(ref: PdfRef): { header: number; body: number } | null {
    const needle = `${ref.num} ${ref.gen} obj`;
    for (let from = this.buf.length, tries = 0; from >= 0 && tries < MAX_FALSE_MATCHES; tries++) {
      const at = lastIndexOfText(this.buf, needle, from);
      if (at === -1) return null;
      if (!isRegular(this.buf[at - 1]) && !isRegular(this.buf[at + needle.length])) {
        return { header: at, body: at + needle.length };
      }
      from = at - 1;
    }
    return null;
  }

  /** The object from the last object stream after `after` that holds it. */
  private findCompressed(num: number, after: number): PdfDict | null {
    for (const at of this.objectStreamsAfter(after)) {
      const stream = this.objectStream(at);
      const offset = stream?.offsets.get(num);
      if (stream && offset !== undefined) return this.lexer(stream.first + offset, stream.data).readDict();
    }
    return null;
  }

  /** Positions of `/ObjStm` after `after`, last first; the backward search is shared between lookups. */
  private *objectStreamsAfter(after: number): Generator<number> {
    for (let i = 0; i < MAX_OBJECT_STREAMS; i++) {
      let at = this.objectStreamTypes[i];
      if (at === undefined) {
        if (this.objectStreamSearchFrom < 0) return;
        at = lastIndexOfText(this.buf, '/ObjStm', this.objectStreamSearchFrom);
        this.objectStreamSearchFrom = at - 1;
        if (at === -1) return;
        this.objectStreamTypes.push(at);
      }
      if (at < after) return;
      yield at;
    }
  }

  private objectStream(typeAt: number): ObjectStream | null {
    if (!this.objectStreams.has(typeAt)) this.objectStreams.set(typeAt, this.readObjectStream(typeAt));
    return this.objectStreams.get(typeAt) ?? null;
  }

  private readObjectStream(typeAt: number): ObjectStream | null {
    const headerAt = this.objectHeaderBefore(typeAt);
    if (headerAt === -1) return null;
    const lexer = this.lexer(headerAt);
    if (lexer.readObjectHeader() === null) return null;
    const dict = lexer.readDict();
    const first = this.integer(dict?.get('First'));
    const count = this.integer(dict?.get('N'));
    if (dict === null || !isName(dict.get('Type'), 'ObjStm') || first === null || count === null) return null;
    const raw = this.streamData(lexer, dict);
    const data = raw === null ? null : this.decode(raw, dict);
    if (data === null) return null;

    const offsets = new Map<number, number>();
    const header = this.lexer(0, data);
    for (let i = 0; i < count; i++) {
      const num = header.next();
      const offset = header.next();
      if (num?.kind !== 'number' || !num.integer || offset?.kind !== 'number' || !offset.integer) return null;
      if (!offsets.has(num.value)) offsets.set(num.value, offset.value);
    }
    return { data, first, offsets };
  }

  /** Start of the `num gen obj` header of the object whose dictionary contains `pos`, or -1. */
  private objectHeaderBefore(pos: number): number {
    const windowStart = Math.max(0, pos - OBJECT_HEADER_WINDOW);
    const obj = lastIndexOfText(this.buf.subarray(windowStart, pos), 'obj');
    if (obj === -1) return -1;
    let at = windowStart + obj;
    for (let fields = 0; fields < 2; fields++) {
      while (at > 0 && isWhitespace(this.buf[at - 1])) at -= 1;
      while (at > 0 && isDigit(this.buf[at - 1])) at -= 1;
    }
    return at;
  }

  /** The raw bytes after the `stream` keyword that follows a stream's dictionary. */
  private streamData(lexer: PdfLexer, dict: PdfDict): Uint8Array | null {
    const keyword = lexer.next();
    if (keyword?.kind !== 'keyword' || keyword.value !== 'stream') return null;
    let start = lexer.pos;
    if (this.buf[start] === 0x0d) start += 1;
    if (this.buf[start] === 0x0a) start += 1;
    const length = this.integer(dict.get('Length'));
    if (length !== null && length >= 0 && start + length <= this.buf.length) {
      const after = this.lexer(start + length).next();
      if (after?.kind === 'keyword' && after.value === 'endstream')
        return this.buf.subarray(start, start + length);
    }
    // A wrong /Length is a common defect; the data then runs to `endstream`.
    const end = indexOfText(this.buf, 'endstream', start);
    return end === -1 ? null : this.buf.subarray(start, end);
  }

  private decode(raw: Uint8Array, dict: PdfDict): Uint8Array | null {
    const filter = dict.get('Filter');
    if (filter === undefined) return raw;
    if (!isName(filter, 'FlateDecode') || dict.has('DecodeParms') || this.inflateBudget <= 0) return null;
    const data = inflateAtMost(raw, this.inflateBudget);
    // A failed inflate is not counted against the budget, which it may have used up: stop.
    this.inflateBudget = data === null ? 0 : this.inflateBudget - data.length;
    return data;
  }

  private integer(value: PdfValue | undefined): number | null {
    if (value?.type === 'number') return Number.isSafeInteger(value.value) ? value.value : null;
    if (value?.type !== 'ref') return null;
    const found = this.findUncompressed(value);
    const token = found === null ? null : this.lexer(found.body).next();
    return token?.kind === 'number' && token.integer ? token.value : null;
  }
}

export function isName(value: PdfValue | undefined, name: string): boolean {
  return value?.type === 'name' && value.value === name;
}

const isDigit = (byte: number | undefined) => byte !== undefined && byte >= 0x30 && byte <= 0x39;
