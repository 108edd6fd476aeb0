import { deltaContentBytes, scanDeltaLine } from './output-estimate';
import { overlayUsage, type ProviderUsage } from './usage';

/** What a tap learned about one answer. */
export abstract class TapResult {
  usage: ProviderUsage | null = null;
  messageId: string | null = null;
  model: string | null = null;
  stopReason: string | null = null;
  /** An `error` event seen after HTTP 200, or the error body of a non-2xx answer. */
  errorType: string | null = null;
  errorMessage: string | null = null;
  /** True once the stream's terminal event (message_stop) or a complete message body was seen. */
  complete = false;
  /** A message_delta carrying usage was seen: the provider's own final count. */
  deltaUsage = false;
  /** UTF-8 bytes of the text, thinking and tool input deltas seen (see output-estimate.ts). */
  contentBytes = 0;
  events = 0;

  abstract write(chunk: Uint8Array): void;
  abstract end(): void;
}

const LF = 0x0a;
const CR = 0x0d;
// Plain Uint8Array and TextDecoder (no Buffer), so the SDK reads usage in browsers and edge runtimes too.
const utf8 = new TextDecoder();
// Event names are ASCII; WHATWG's latin1 (windows-1252) reads them byte for byte.
const ascii = new TextDecoder('latin1');
const INTERESTING = new Set(['message_start', 'message_delta', 'message_stop', 'error']);

/**
 * Reads usage from a server-sent event stream as it passes, without holding it back.
 *
 * Network chunks may split anywhere (inside a line, a UTF-8 character, or between CR and
 * LF), so only complete lines are decoded. Only the few events that carry usage are parsed;
 * content deltas are measured from their raw bytes (for the estimate of a stream cut short)
 * without decoding, and other events are skipped by their `event:` line.
 */
export class SseUsageTap extends TapResult {
  #carry: Uint8Array | null = null;
  #skipLeadingLf = false;
  #event = '';
  #data: string[] = [];
  #inEvent = false;

  /** True when what passed so far ended on an event's end: a comment line may go in here. */
  get atBoundary(): boolean {
    return this.#carry === null && !this.#inEvent;
  }

  write(chunk: Uint8Array): void {
    let buf = chunk;
    if (this.#skipLeadingLf) {
      this.#skipLeadingLf = false;
      if (buf[0] === LF) buf = buf.subarray(1);
    }
    if (this.#carry) {
      buf = concat([this.#carry, buf], this.#carry.length + buf.length);
      this.#carry = null;
    }
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const b = buf[i];
      if (b !== LF && b !== CR) continue;
      this.#line(buf, start, i);
      if (b === CR) {
        if (i + 1 === buf.length) this.#skipLeadingLf = true;
        else if (buf[i + 1] === LF) i++;
      }
      start = i + 1;
    }
    if (start < buf.length) this.#carry = buf.slice(start);
  }

  /** Call when the stream ends: a last event without its blank line still counts. */
  end(): void {
    if (this.#carry) {
      const rest = this.#carry;
      this.#carry = null;
      this.#line(rest, 0, rest.length);
    }
    this.#dispatch();
  }

  #line(buf: Uint8Array, start: number, end: number): void {
    if (start === end) return this.#dispatch();
    this.#inEvent = true;
    // Field names are ASCII; the value is decoded only for events we read.
    if (startsWith(buf, start, end, 'event:')) {
      this.#event = ascii.decode(buf.subarray(start + 6, end)).trim();
    } else if (startsWith(buf, start, end, 'data:')) {
      const from = buf[start + 5] === 0x20 ? start + 6 : start + 5;
      if (this.#event === 'content_block_delta') {
        const bytes = scanDeltaLine(buf, from, end);
        if (bytes >= 0) {
          this.contentBytes += bytes;
          return;
        }
        // Another layout than the provider's: parsed at dispatch.
      } else if (this.#event !== '' && !INTERESTING.has(this.#event)) {
        return;
      }
      this.#data.push(utf8.decode(buf.subarray(from, end)));
    }
  }

  #dispatch(): void {
    const name = this.#event;
    const data = this.#data;
    this.#inEvent = false;
    this.#event = '';
    this.#data = [];
    if (name !== '' || data.length > 0) this.events++;
    if (data.length === 0) return;
    let payload: Record<string, any>;
    try {
      payload = JSON.parse(data.join('\n'));
    } catch {
      return;
    }
    const type = typeof payload.type === 'string' ? payload.type : name;
    if (type === 'message_start') {
      const message = payload.message ?? {};
      this.messageId = message.id ?? this.messageId;
      this.model = message.model ?? this.model;
      if (message.usage) this.usage = overlayUsage(this.usage ?? {}, message.usage);
    } else if (type === 'content_block_delta') {
      this.contentBytes += deltaContentBytes(payload);
    } else if (type === 'message_delta') {
      if (payload.usage) {
        this.usage = overlayUsage(this.usage ?? {}, payload.usage);
        this.deltaUsage = true;
      }
      if (payload.delta?.stop_reason) this.stopReason = payload.delta.stop_reason;
    } else if (type === 'message_stop') {
      this.complete = true;
    } else if (type === 'error') {
      this.errorType = payload.error?.type ?? 'api_error';
      this.errorMessage = payload.error?.message ?? null;
    }
  }
}

function startsWith(buf: Uint8Array, start: number, end: number, text: string): boolean {
  if (end - start < text.length) return false;
  for (let i = 0; i < text.length; i++) if (buf[start + i] !== text.charCodeAt(i)) return false;
  return true;
}

/**
 * Reads usage (or the error) from a JSON answer. The body is kept only up to `limit`
 * bytes: a message answer is small, and a huge one is passed through untapped.
 */
export class JsonUsageTap extends TapResult {
  #chunks: Uint8Array[] = [];
  #size = 0;
  readonly #limit: number;

  constructor(limit = 8 * 1024 * 1024) {
    super();
    this.#limit = limit;
  }

  write(chunk: Uint8Array): void {
    this.#size += chunk.length;
    if (this.#size <= this.#limit) this.#chunks.push(chunk);
    else this.#chunks.length = 0;
  }

  end(): void {
    if (this.#size > this.#limit || this.#chunks.length === 0) return;
    let body: Record<string, any>;
    try {
      body = JSON.parse(utf8.decode(concat(this.#chunks, this.#size)));
    } catch {
      return;
    } finally {
      this.#chunks = [];
    }
    if (body?.type === 'error') {
      this.errorType = body.error?.type ?? 'api_error';
      this.errorMessage = body.error?.message ?? null;
      return;
    }
    this.complete = true;
    // Only a message answer names a message and carries usage (a model listing has ids too).
    if (body?.type !== 'message') return;
    this.messageId = typeof body?.id === 'string' ? body.id : null;
    this.model = typeof body?.model === 'string' ? body.model : null;
    this.stopReason = typeof body?.stop_reason === 'string' ? body.stop_reason : null;
    this.usage = body?.usage && typeof body.usage === 'object' ? body.usage : null;
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]!.length === size) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
