import { pino, type DestinationStream } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose every line carries `bindings` (a request's id, for one). */
  child(bindings: Record<string, unknown>): Logger;
  /** Writes the lines still held back (an asynchronous destination's queue) before returning. */
  flush(): void;
}

// Anything shaped like a credential is masked before it can reach a log line.
const SECRET = /\b(sk-ant-|whsec_|kg_(?:live|test|admin)_)[A-Za-z0-9_-]{4,}/g;

export function redact(text: string): string {
  return text.replace(SECRET, '$1[redacted]');
}

/** True when `text` holds something shaped like a credential. */
export function looksSecret(text: string): boolean {
  SECRET.lastIndex = 0;
  const found = SECRET.test(text);
  SECRET.lastIndex = 0;
  return found;
}

// Fields that hold credentials by name; the regex covers values anywhere else. No wildcard
// paths: one made every line 5 µs dearer (pino clones the object to censor it).
const REDACT_PATHS = [
  'authorization',
  'apiKey',
  'providerKey',
  'secret',
  'token',
  'password',
  'headers.authorization',
  'headers["x-api-key"]',
];

export function serializeError(value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const code = (value as { code?: unknown }).code;
  return { name: value.name, message: value.message, ...(typeof code === 'string' ? { code } : {}) };
}

/** Where log lines go; `flush` writes what it holds back. */
export interface LineSink {
  write(line: string): void;
  flush(): void;
}

/**
 * stderr through sonic-boom. Asynchronous unless `sync`: lines wait in memory until
 * `minLength` bytes do (4 KB, a dozen access lines) or `flushMs` has passed (250 ms), then go
 * out in one write in the background, so a call never waits on stderr (often a pipe to a log
 * collector). One asynchronous write per line (`minLength: 0`) costs more than a synchronous
 * one (bench/RESULTS.md). `flush` writes what waits synchronously: at shutdown, and (pino) at
 * process exit; a kill -9 loses at most `flushMs` of lines.
 */
export function stderrSink(opts: { sync?: boolean; minLength?: number; flushMs?: number } = {}): LineSink {
  const sync = opts.sync ?? false;
  const dest = pino.destination({
    fd: 2,
    sync,
    // A stalled reader (a full pipe) holds up to 16 MiB here, then lines are dropped: the calls go on.
    ...(sync
      ? {}
      : {
          minLength: opts.minLength ?? 4096,
          periodicFlush: opts.flushMs ?? 250,
          maxLength: 16 * 1024 * 1024,
        }),
  });
  return {
    write: (line) => dest.write(line),
    flush() {
      if (sync) return;
      try {
        dest.flushSync();
      } catch {
        // stderr closed or not ready: nothing more can be written there.
      }
    },
  };
}

/**
 * JSON lines (pino) to `sink`: stderr, asynchronously, unless told otherwise (tests capture
 * lines with a function, written synchronously). Every line goes through `redact` whole, so a
 * secret in a message, a field or an error's text is masked.
 */
export function createLogger(
  level: LogLevel = 'info',
  sink: ((line: string) => void) | LineSink = stderrSink(),
): Logger {
  const out: LineSink = typeof sink === 'function' ? { write: sink, flush: () => {} } : sink;
  const destination: DestinationStream = { write: (line: string) => out.write(redact(line)) };
  const base = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { error: serializeError, err: serializeError },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    destination,
  );
  return wrap(base, out.flush);
}

/**
 * A child is made on its first line that its level lets through: most requests log none, and
 * a pino child costs a few µs. One object per request logger, methods on the prototype (no
 * closures): every request makes one.
 */
class LazyChild implements Logger {
  readonly #parent: pino.Logger;
  readonly #bindings: Record<string, unknown> | undefined;
  #made: pino.Logger | null;
  readonly flush: () => void;

  constructor(parent: pino.Logger, flush: () => void, bindings?: Record<string, unknown>) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#made = bindings ? null : parent;
    this.flush = flush;
  }

  #p(): pino.Logger {
    return (this.#made ??= this.#parent.child(this.#bindings!));
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    if (!this.#parent.isLevelEnabled('debug')) return;
    if (fields) this.#p().debug(fields, msg);
    else this.#p().debug(msg);
  }

  info(msg: string, fields?: Record<string, unknown>): void {
    if (!this.#parent.isLevelEnabled('info')) return;
    if (fields) this.#p().info(fields, msg);
    else this.#p().info(msg);
  }

  warn(msg: string, fields?: Record<string, unknown>): void {
    if (!this.#parent.isLevelEnabled('warn')) return;
    if (fields) this.#p().warn(fields, msg);
    else this.#p().warn(msg);
  }

  error(msg: string, fields?: Record<string, unknown>): void {
    if (!this.#parent.isLevelEnabled('error')) return;
    if (fields) this.#p().error(fields, msg);
    else this.#p().error(msg);
  }

  child(more: Record<string, unknown>): Logger {
    return new LazyChild(this.#p(), this.flush, more);
  }
}

function wrap(parent: pino.Logger, flush: () => void, bindings?: Record<string, unknown>): Logger {
  return new LazyChild(parent, flush, bindings);
}

export const silentLogger: Logger = createLogger('silent', () => {});
