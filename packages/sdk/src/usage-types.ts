import { cacheWrites } from '@keygate/protocol';

/** Why a call (or one attempt of it) failed, in the buckets that matter for operations. */
export type ErrorCategory =
  | 'rate_limit'
  | 'overloaded'
  | 'timeout'
  | 'connection'
  | 'malformed_tool_call'
  | 'other';

export const ERROR_CATEGORIES: readonly ErrorCategory[] = [
  'rate_limit',
  'overloaded',
  'timeout',
  'connection',
  'malformed_tool_call',
  'other',
];

export type CategoryCounts = Record<ErrorCategory, number>;

/** The provider's usage, complete: absent fields are 0, the 5m/1h split is always there. */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  server_tool_use: { web_search_requests: number };
}

export type Endpoint = 'messages' | 'count_tokens' | 'models' | 'other';

/** What one API call consumed and how it went; `onUsage` gets one per call, retries included. */
export interface UsageRecord {
  /** The `request-id` the gateway answered with (the provider's when it got that far). */
  requestId: string | null;
  /** The gateway's id of the call (`keygate-request-id`), as in its call log. */
  gatewayRequestId: string | null;
  /** `keygate-group-id` (or Claude Code's `x-claude-code-session-id`) sent with the call. */
  groupId: string | null;
  endpoint: Endpoint;
  method: string;
  model: string | null;
  messageId: string | null;
  stream: boolean;
  /** HTTP status of the last attempt; null when no response arrived. */
  status: number | null;
  /**
   * The provider's `error.type` (also from an SSE `error` event after HTTP 200), or `timeout`,
   * `connection`, `aborted` (the app cancelled) when no response arrived. null on success.
   */
  errorType: string | null;
  errorCategory: ErrorCategory | null;
  stopReason: string | null;
  /**
   * Usage as the app's SDK sees it; for streams, what arrived before the stream ended, except
   * `output_tokens` when `estimated`.
   */
  usage: TokenUsage | null;
  /**
   * The stream ended before the provider's final count (aborted, cut, timed out): `output_tokens`
   * is estimated from the content received, as the gateway records it (never below the count sent).
   */
  estimated: boolean;
  /** The usage object exactly as received (folded over message_start and message_delta for streams). */
  providerUsage: Readonly<Record<string, unknown>> | null;
  /** Milliseconds from the first attempt to the end of the response, retry waits included. */
  latencyMs: number;
  /** Milliseconds from the first attempt to the response headers of the last one. */
  ttfbMs: number | null;
  retries: number;
  /** The category of each failed attempt that was retried, in order. */
  retryCategories: ErrorCategory[];
  startedAt: Date;
}

/** Running totals: tokens, calls, failed calls and retries by category. */
export interface UsageSummary extends TokenUsage {
  calls: number;
  /** Calls that ended in an error, plus malformed tool calls the tool loop saw. */
  errors: CategoryCounts;
  retries: CategoryCounts;
}

export function zeroCounts(): CategoryCounts {
  return { rate_limit: 0, overloaded: 0, timeout: 0, connection: 0, malformed_tool_call: 0, other: 0 };
}

export function zeroTokens(): TokenUsage {
  return {
    input_tokens: 0,
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    server_tool_use: { web_search_requests: 0 },
  };
}

export function emptySummary(): UsageSummary {
  return { ...zeroTokens(), calls: 0, errors: zeroCounts(), retries: zeroCounts() };
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const object = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};

/** Completes a provider usage object; the 5m/1h split is the gateway's (`cacheWrites`). */
export function normalizeUsage(raw: Readonly<Record<string, unknown>>): TokenUsage {
  const writes = cacheWrites(raw);
  return {
    input_tokens: count(raw.input_tokens),
    output_tokens: count(raw.output_tokens),
    cache_creation_input_tokens: writes.total,
    cache_read_input_tokens: count(raw.cache_read_input_tokens),
    cache_creation: {
      ephemeral_5m_input_tokens: writes.fiveMinute,
      ephemeral_1h_input_tokens: writes.oneHour,
    },
    server_tool_use: { web_search_requests: count(object(raw.server_tool_use).web_search_requests) },
  };
}

/** Adds `b` into `a` in place. */
export function addTokens(a: TokenUsage, b: TokenUsage): void {
  a.input_tokens += b.input_tokens;
  a.output_tokens += b.output_tokens;
  a.cache_creation_input_tokens += b.cache_creation_input_tokens;
  a.cache_read_input_tokens += b.cache_read_input_tokens;
  a.cache_creation.ephemeral_5m_input_tokens += b.cache_creation.ephemeral_5m_input_tokens;
  a.cache_creation.ephemeral_1h_input_tokens += b.cache_creation.ephemeral_1h_input_tokens;
  a.server_tool_use.web_search_requests += b.server_tool_use.web_search_requests;
}

/** The category of a failure, from the HTTP status and the provider's error type. */
export function categorize(status: number | null, errorType: string | null): ErrorCategory {
  if (status === 429 || errorType === 'rate_limit_error') return 'rate_limit';
  if (status === 529 || errorType === 'overloaded_error') return 'overloaded';
  if (status === 408 || status === 504 || errorType === 'timeout_error' || errorType === 'timeout')
    return 'timeout';
  if (errorType === 'connection') return 'connection';
  return 'other';
}
