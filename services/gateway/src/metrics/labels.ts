import { looksSecret } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';

/** Label values for anything past a label's cap, or not fit to be one. */
export const OTHER = 'other';
const FIT = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,99}$/;

/**
 * Values of one label, capped: the first `max` distinct values are kept as they are, later
 * ones (and values that are no plain identifier, or look like a secret) are counted as
 * `other`, so a scrape's size never grows with clients' input.
 */
export class BoundedLabel {
  readonly #seen = new Set<string>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  value(raw: string | null): string {
    if (raw === null || raw === '') return 'none';
    if (this.#seen.has(raw)) return raw;
    if (this.#seen.size >= this.#max || !FIT.test(raw) || looksSecret(raw)) return OTHER;
    this.#seen.add(raw);
    return raw;
  }
}

export const ERROR_CATEGORIES = [
  'rate_limit',
  'overloaded',
  'timeout',
  'malformed_tool_call',
  'upstream_error',
  'client_gone',
  'shutdown',
  'refused',
] as const;
export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

/**
 * The error category of a call, or null when it succeeded. `refused` is every other 4xx
 * (authentication, validation, size); a 2xx stream that ended with an `error` event takes the
 * event's category.
 */
export function errorCategory(r: Pick<CallRecord, 'status' | 'errorType'>): ErrorCategory | null {
  const t = r.errorType ?? '';
  if (!t && r.status < 400) return null;
  if (t.includes('shutdown')) return 'shutdown';
  if (t === 'client_closed' || r.status === 499) return 'client_gone';
  if (t === 'rate_limit_error' || r.status === 429) return 'rate_limit';
  if (t === 'overloaded_error' || r.status === 529) return 'overloaded';
  if (t.includes('timeout') || r.status === 504 || r.status === 408) return 'timeout';
  if (t.includes('tool')) return 'malformed_tool_call';
  if (t === 'api_error' || r.status >= 500 || r.status < 400) return 'upstream_error';
  return 'refused';
}
