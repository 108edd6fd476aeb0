import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Ledger } from './ledger';
import type { PromptCache } from './cache';

export interface CacheCreation {
  ephemeral_5m_input_tokens: number;
  ephemeral_1h_input_tokens: number;
}

export interface ServerToolUsage {
  web_search_requests: number;
}

/** The provider's usage object, complete. */
export interface Usage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: CacheCreation;
  output_tokens: number;
  server_tool_use: ServerToolUsage;
  service_tier: string;
}

export type Endpoint = 'messages' | 'count_tokens' | 'models';

/** What the emulator served for one request; see README "Ledger". */
export interface LedgerEntry {
  /** The `req_…` sent back in the `request-id` header. */
  requestId: string;
  messageId: string | null;
  endpoint: Endpoint;
  model: string | null;
  stream: boolean;
  /** HTTP status sent; 499 when the client went away before the headers. */
  status: number;
  /** `error.type` sent, in a JSON error body or an SSE `error` event. */
  errorType: string | null;
  scenario: string | null;
  /** Final usage; for streams, folded over the events actually written. */
  usage: Usage | null;
  /** The response was written in full (for streams: through `message_stop`). */
  complete: boolean;
  /** SSE events written (0 for JSON responses). */
  eventsSent: number;
  /** Request headers as received (Node lowercases the names). */
  headers: Record<string, string>;
  startedAt: number;
  endedAt: number | null;
}

export interface EmulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Expected `x-api-key`; `null` accepts any non-empty key. Default `sk-ant-emulator-key`. */
  apiKey?: string | null;
  /** Milliseconds, for cache TTLs. Default `Date.now`. */
  clock?: () => number;
  /** Scenario (or comma-separated list) used when a request names none. */
  defaultScenario?: string;
  /**
   * Also accept `authorization: Bearer <apiKey>` when no `x-api-key` is sent. Off by default
   * (the provider takes `x-api-key`), but `@anthropic-ai/sdk` ≥ 1.x sends only Bearer.
   */
  acceptBearer?: boolean;
  /** Ledger entries kept (oldest dropped first), so long benchmarks stay flat. Default 10,000. */
  ledgerLimit?: number;
  /** Called with each request the emulator answers past auth, as received (see README "Request capture"). */
  onRequest?: RequestListener | null;
}

/** One request as it reached the emulator, bytes untouched: what a provider would have seen. */
export interface ReceivedRequest {
  /** The `req_…` the emulator answers with: the key of its ledger entry. */
  requestId: string;
  method: string;
  path: string;
  /** The raw query string without `?`, `''` when there is none. */
  query: string;
  /** As received (Node lowercases the names). */
  headers: Record<string, string>;
  /** The body bytes; empty for GET. */
  body: Buffer;
}

export type RequestListener = (request: ReceivedRequest) => void;

export interface HandlerOptions extends Omit<EmulatorOptions, 'port' | 'host'> {
  ledger?: Ledger;
  cache?: PromptCache;
}

/**
 * A node:http request listener that also exposes what it served. A host server that has
 * already read the request body passes it as `body`.
 */
export type EmulatorHandler = ((req: IncomingMessage, res: ServerResponse, body?: Buffer) => void) & {
  ledger: Ledger;
  cache: PromptCache;
  /** May be set or cleared at any time; see `EmulatorOptions.onRequest`. */
  onRequest: RequestListener | null;
};

export interface Emulator {
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  apiKey: string | null;
  ledger: Ledger;
  cache: PromptCache;
  server: Server;
  /** May be set or cleared at any time; see `EmulatorOptions.onRequest`. */
  onRequest: RequestListener | null;
  /** Stops listening and destroys open sockets. */
  close(): Promise<void>;
}

/** A content block or any other JSON object in a request: only `type` is assumed. */
export type Json = Record<string, unknown>;

export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export interface MessageParam {
  /** `system` only with the per-turn-control beta. */
  role: 'user' | 'assistant' | 'system';
  content: string | Json[];
}

/** A messages (or count_tokens) body after validation; unknown fields are kept and ignored. */
export interface MessagesBody {
  model: string;
  max_tokens: number;
  messages: MessageParam[];
  system?: string | Json[];
  tools?: Json[];
  tool_choice?: { type: string; name?: string };
  thinking?: { type: string; budget_tokens?: number; display?: string | null };
  stream?: boolean;
  stop_sequences?: string[];
  cache_control?: CacheControl;
  [field: string]: unknown;
}
