export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
// Anything shaped like a credential is masked before it can reach a log line.
const SECRET = /\b(sk-ant-|whsec_|kg_(?:live|test|admin)_)[A-Za-z0-9_-]{4,}/g;

export function redact(text: string): string {
  return text.replace(SECRET, '$1[redacted]');
}

/** One JSON line per entry on stderr. */
export function createLogger(level: LogLevel = 'info', write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const min = ORDER[level];
  const log = (lvl: Exclude<LogLevel, 'silent'>) => (msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return;
    const entry = { level: lvl, time: new Date().toISOString(), msg, ...fields };
    write(redact(JSON.stringify(entry, (_k, v) => (v instanceof Error ? { name: v.name, message: v.message } : v))) + '\n');
  };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

export const silentLogger: Logger = createLogger('silent');
