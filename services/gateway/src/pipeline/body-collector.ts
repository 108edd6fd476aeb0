// Past this much received, the rest of a body is copied into one buffer sized from its
// content-length, rather than kept as chunks and concatenated at the end (twice the body's size
// at the peak). Waiting for real bytes first means a declared size reserves nothing.
export const PREALLOCATE = 1024 * 1024;

/**
 * Gathers a request body's chunks into one buffer, for both readers (proxy/ for proxied calls,
 * body-reader.ts for the routes). Below PREALLOCATE the chunks are kept and joined once at the
 * end; past it, into one buffer of the declared size, chunk by chunk as they come.
 */
export class BodyCollector {
  readonly #declared: number;
  #chunks: Uint8Array[] = [];
  #into: Buffer | null = null;
  /** Bytes gathered so far. */
  size = 0;

  /** `declared`: the request's content-length (NaN when it has none). */
  constructor(declared: number) {
    this.#declared = declared;
  }

  add(chunk: Uint8Array): void {
    const into = this.#into;
    if (into && this.size + chunk.length <= into.length) into.set(chunk, this.size);
    else if (into) {
      // More than was declared (a parser would have stopped it): kept as chunks after all.
      this.#chunks = [into.subarray(0, this.size), chunk];
      this.#into = null;
    } else this.#chunks.push(chunk);
    this.size += chunk.length;
    if (this.#into || this.size < PREALLOCATE) return;
    if (!Number.isSafeInteger(this.#declared) || this.#declared < this.size) return;
    const buffer = Buffer.allocUnsafe(this.#declared);
    // Chunk by chunk: a concatenation first would allocate and copy what came so far twice.
    let at = 0;
    for (const c of this.#chunks) {
      buffer.set(c, at);
      at += c.length;
    }
    this.#chunks = [];
    this.#into = buffer;
  }

  /** The whole body, as one buffer. */
  body(): Buffer {
    if (this.#into) return this.#into.subarray(0, this.size);
    const only = this.#chunks.length === 1 ? this.#chunks[0]! : null;
    if (only && Buffer.isBuffer(only)) return only;
    return Buffer.concat(this.#chunks, this.size);
  }
}
