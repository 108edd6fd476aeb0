const LF = 0x0a;
const CR = 0x0d;

/**
 * Cuts a server-sent event stream into whole events as bytes arrive, however the network
 * split them. Each event comes out as its lines (without the blank line that ends it), so
 * a caller can add an `id:` line or replay it later. Comment lines (`:` first) and a bare
 * blank line carry no event and are dropped.
 */
export class SseFramer {
  #pending: Uint8Array[] = [];
  #pendingSize = 0;
  /** Bytes of the current event so far (its complete lines). */
  #lines: string[] = [];
  #skipLeadingLf = false;
  readonly #decoder = new TextDecoder();
  readonly #onEvent: (lines: readonly string[]) => void;

  constructor(onEvent: (lines: readonly string[]) => void) {
    this.#onEvent = onEvent;
  }

  /** True when no part of an event is held: what was written so far ended on an event's end. */
  get atBoundary(): boolean {
    return this.#pendingSize === 0 && this.#lines.length === 0;
  }

  /** Drops a partly read event (its source broke; it will come again whole). */
  reset(): void {
    this.#pending = [];
    this.#pendingSize = 0;
    this.#lines = [];
    this.#skipLeadingLf = false;
  }

  write(chunk: Uint8Array): void {
    let start = 0;
    if (this.#skipLeadingLf) {
      this.#skipLeadingLf = false;
      if (chunk[0] === LF) start = 1;
    }
    for (let i = start; i < chunk.length; i++) {
      const b = chunk[i];
      if (b !== LF && b !== CR) continue;
      this.#line(chunk.subarray(start, i));
      if (b === CR) {
        if (i + 1 === chunk.length) this.#skipLeadingLf = true;
        else if (chunk[i + 1] === LF) i++;
      }
      start = i + 1;
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.slice(start));
      this.#pendingSize += chunk.length - start;
    }
  }

  /** The stream ended: an event without its closing blank line still counts. */
  end(): void {
    if (this.#pendingSize > 0) this.#line(new Uint8Array(0));
    this.#dispatch();
  }

  #line(tail: Uint8Array): void {
    let bytes = tail;
    if (this.#pendingSize > 0) {
      bytes = new Uint8Array(this.#pendingSize + tail.length);
      let at = 0;
      for (const part of this.#pending) {
        bytes.set(part, at);
        at += part.length;
      }
      bytes.set(tail, at);
      this.#pending = [];
      this.#pendingSize = 0;
    }
    if (bytes.length === 0) return this.#dispatch();
    // A comment line: keeps a connection warm, carries nothing.
    if (bytes[0] === 0x3a) return;
    this.#lines.push(this.#decoder.decode(bytes));
  }

  #dispatch(): void {
    if (this.#lines.length === 0) return;
    const lines = this.#lines;
    this.#lines = [];
    this.#onEvent(lines);
  }
}

/** The `event:` name of an event's lines, or '' when it has none. */
export function eventName(lines: readonly string[]): string {
  for (const line of lines) if (line.startsWith('event:')) return line.slice(6).trim();
  return '';
}
