type Json = Record<string, unknown>;

/** What a Messages stream said about itself, as far as it got. */
export interface StreamFacts {
  messageId: string | null;
  model: string | null;
  /** `message_start` usage overwritten field by field by each `message_delta` usage. */
  usage: Json | null;
  stopReason: string | null;
  /** `error.type` of an SSE `error` event. */
  errorType: string | null;
  /** `message_stop` arrived. */
  complete: boolean;
}

// Only these events are parsed; content deltas, the bulk of a stream, are skipped unread.
const WANTED = new Set(['message_start', 'message_delta', 'message_stop', 'error']);
const LINE_END = /\r\n|\r|\n/g;

/**
 * Reads the usage of a Messages stream from its raw bytes, chunk by chunk, wherever the chunk
 * boundaries fall (inside a UTF-8 character, between `\r` and `\n`). It only observes: the
 * bytes themselves go to the app untouched.
 */
export class SseUsageReader {
  readonly facts: StreamFacts = { messageId: null, model: null, usage: null, stopReason: null, errorType: null, complete: false };
  #decoder = new TextDecoder();
  #buffer = '';
  #event = '';
  #data: string[] = [];

  push(chunk: Uint8Array): void {
    this.#buffer += this.#decoder.decode(chunk, { stream: true });
    this.#readLines(false);
  }

  /** The body ended: reads what is left, including a last event without its blank line. */
  end(): void {
    this.#buffer += this.#decoder.decode();
    this.#readLines(true);
    if (this.#buffer !== '') this.#line(this.#buffer);
    this.#buffer = '';
    this.#dispatch();
  }

  #readLines(final: boolean): void {
    const text = this.#buffer;
    let start = 0;
    LINE_END.lastIndex = 0;
    for (let m = LINE_END.exec(text); m !== null; m = LINE_END.exec(text)) {
      // A lone '\r' at the very end may be the first half of '\r\n': wait for the next chunk.
      if (!final && m[0] === '\r' && m.index === text.length - 1) break;
      this.#line(text.slice(start, m.index));
      start = m.index + m[0].length;
    }
    this.#buffer = text.slice(start);
  }

  #line(line: string): void {
    if (line === '') return this.#dispatch();
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
  }

  #dispatch(): void {
    const event = this.#event;
    const data = this.#data;
    this.#event = '';
    this.#data = [];
    if (data.length === 0 || (event !== '' && !WANTED.has(event))) return;
    let json: Json;
    try {
      json = JSON.parse(data.join('\n')) as Json;
    } catch {
      return;
    }
    if (typeof json !== 'object' || json === null) return;
    this.#apply(event || String(json.type), json);
  }

  #apply(type: string, json: Json): void {
    const facts = this.facts;
    switch (type) {
      case 'message_start': {
        const message = asObject(json.message);
        facts.messageId = typeof message.id === 'string' ? message.id : facts.messageId;
        facts.model = typeof message.model === 'string' ? message.model : facts.model;
        facts.usage = overwrite({}, asObject(message.usage));
        break;
      }
      case 'message_delta': {
        const stop = asObject(json.delta).stop_reason;
        if (typeof stop === 'string') facts.stopReason = stop;
        facts.usage = overwrite(facts.usage ?? {}, asObject(json.usage));
        break;
      }
      case 'message_stop':
        facts.complete = true;
        break;
      case 'error': {
        const errorType = asObject(json.error).type;
        facts.errorType = typeof errorType === 'string' ? errorType : 'api_error';
        break;
      }
    }
  }
}

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

/**
 * Later usage replaces earlier usage field by field (nested objects too); a field that is absent
 * or null keeps its value. Usage fields are running totals: adding them would over-count.
 */
export function overwrite(base: Json, update: Json): Json {
  for (const [key, value] of Object.entries(update)) {
    if (value === null || value === undefined) continue;
    const current = base[key];
    const nested = typeof value === 'object' && !Array.isArray(value) && typeof current === 'object' && current !== null && !Array.isArray(current);
    base[key] = nested ? overwrite({ ...(current as Json) }, value as Json) : value;
  }
  return base;
}
