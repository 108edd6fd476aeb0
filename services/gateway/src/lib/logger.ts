import { pino, type DestinationStream } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose every line carries `bindings` (a request's id, for one). */
  child(bindings: Record<string, unknown>): Logger;
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
const REDACT_PATHS = ['authorization', 'apiKey', 'providerKey', 'secret', 'token', 'password', 'headers.authorization', 'headers["x-api-key"]'];

function serializeError(value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const code = (value as { code?: unknown }).code;
  return { name: value.name, message: value.message, ...(typeof code === 'string' ? { code } : {}) };
}

/**
 * JSON lines (pino) on stderr, or to `write` (tests capture lines with it). Every line goes
 * through `redact` whole, so a secret in a message, a field or an error's text is masked.
 */
export function createLogger(level: LogLevel = 'info', write?: (line: string) => void): Logger {
  const sink = write ?? stderrWriter();
  const destination: DestinationStream = { write: (line: string) => sink(redact(line)) };
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
  return wrap(base);
}

function stderrWriter(): (line: string) => void {
  const dest = pino.destination({ fd: 2, sync: true });
  return (line) => dest.write(line);
}

/** A child is made on its first line: most requests log none, and a pino child costs a few µs. */
function wrap(parent: pino.Logger, bindings?: Record<string, unknown>): Logger {
  let made: pino.Logger | null = bindings ? null : parent;
  const p = () => (made ??= parent.child(bindings!));
  return {
    debug: (msg, fields) => (fields ? p().debug(fields, msg) : p().debug(msg)),
    info: (msg, fields) => (fields ? p().info(fields, msg) : p().info(msg)),
    warn: (msg, fields) => (fields ? p().warn(fields, msg) : p().warn(msg)),
    error: (msg, fields) => (fields ? p().error(fields, msg) : p().error(msg)),
    child: (more) => wrap(p(), more),
  };
}

export const silentLogger: Logger = createLogger('silent');
