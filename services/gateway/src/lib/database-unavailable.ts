// Errors that say the database cannot be reached or cannot serve now, not that it refused a query:
// the socket's own (Node), the driver's (postgres.js names its connection failures), and
// PostgreSQL's class 08 (connection exception), 57P01-57P03 (shutting down, crashed, starting
// up) and 53300 (too many connections), from https://www.postgresql.org/docs/current/errcodes-appendix.html
// (read 2026-11-29).
const UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** True when `err` says the database is unreachable or not serving (an outage), not that it refused the query. */
export function databaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (UNAVAILABLE.has(code) || code.startsWith('08'))) return true;
  // A host name with several addresses fails with one error per address.
  const errors = (err as { errors?: unknown } | null)?.errors;
  return Array.isArray(errors) && errors.length > 0 && errors.every(databaseUnavailable);
}
