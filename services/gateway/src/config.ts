import { join } from 'node:path';
import { z } from 'zod';
import { resolveDataDir } from './lib/data-dir';
import { EgressPolicy } from './lib/egress';
import { secretWeakness } from './lib/secret-box';

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A duration where 0 is allowed (it means none, or off, as the setting says). */
const msOrZero = (fallback: number) => z.coerce.number().int().min(0).default(fallback);
const port = () => z.coerce.number().int().min(0).max(65535);
const bytes = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/**
 * What a setting is for, and what happens when it is unset and has no default value. The
 * settings reference (docs/reference/settings.md) is generated from these (`config-docs.ts`); a test keeps them equal.
 */
const doc = (description: string, unset?: string) => ({ description, ...(unset ? { unset } : {}) });

export const EnvSchema = z.object({
  PORT: port().default(8080).meta(doc('port the gateway listens on (0: any free port)')),
  HOST: z.string().min(1).default('127.0.0.1').meta(doc('address the gateway listens on')),
  DATABASE_URL: z
    .preprocess(
      // libpq takes a user with no host (`postgres://me@/db?host=/var/run/postgresql`); a WHATWG
      // URL does not, so the host the driver would assume for an empty one is written in. A
      // `host` query parameter still overrides it (store/database.ts, driverTarget).
      (v) => (typeof v === 'string' ? v.replace(/^(postgres(?:ql)?:\/\/[^/@?#]*@)\//, '$1localhost/') : v),
      z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }),
    )
    .optional()
    .meta(
      doc(
        "PostgreSQL URL, libpq's `host`, `port`, `user` and `dbname` query parameters included (`?host=/var/run/postgresql` for a Unix socket); without it an embedded PostgreSQL runs in the data dir",
        '(embedded)',
      ),
    ),
  KEYGATE_DATA_DIR: z
    .string()
    .min(1)
    .default('.keygate')
    .meta(doc('embedded database, generated secret and operator token')),
  KEYGATE_SECRET: z
    .string()
    .refine((s) => secretWeakness(s) === null, {
      error: (i) => secretWeakness(String(i.input)) ?? 'too weak',
    })
    .optional()
    .meta(
      doc(
        'encrypts provider keys and webhook secrets at rest (required with `DATABASE_URL`; 32+ random characters, e.g. `openssl rand -base64 32`)',
        'generated in the data dir',
      ),
    ),
  KEYGATE_SECRET_PREVIOUS: z
    .string()
    .min(1)
    .optional()
    .meta(
      doc(
        'the secret that values sealed before v2 were sealed with, when it was too weak and KEYGATE_SECRET is a new one: read once at start to re-seal them',
        '(KEYGATE_SECRET)',
      ),
    ),
  KEYGATE_UPSTREAM_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .default('https://api.anthropic.com')
    .meta(doc('where live keys are forwarded: the provider, or an emulator (`pnpm emulator`)')),
  KEYGATE_OPERATOR_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .meta(
      doc('bearer token of the operator API (`/operator/v1`); 16+ characters', 'generated in the data dir'),
    ),
  KEYGATE_UPSTREAM_TIMEOUT_MS: ms(600_000).meta(
    doc('no answer (or no bytes mid-stream) from the provider for this long → 504 / cut'),
  ),
  KEYGATE_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1024)
    .optional()
    .meta(
      doc(
        'gateway processes `keygate serve` runs on the one port (`--workers` overrides); 1 serves from one process. Without `REDIS_URL` each process counts rate limits alone, so the default is then one',
        'one per core with `REDIS_URL`, else 1',
      ),
    ),
  KEYGATE_SSE_KEEPALIVE_MS: msOrZero(15_000).meta(
    doc(
      "a stream silent this long (the provider's pings count) gets an SSE comment line, so clients do not time out (0: none)",
    ),
  ),
  KEYGATE_RESUMABLE_TTL_MS: ms(600_000).meta(
    doc('a resumable stream (`keygate-resumable: true`) keeps its events this long after its last one'),
  ),
  KEYGATE_RESUMABLE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(8 * 1024 * 1024)
    .meta(
      doc("bytes of a resumable stream's events kept per call (in Redis with REDIS_URL, else in memory)"),
    ),
  KEYGATE_RESUMABLE_MAX_BYTES_PER_KEY: bytes(32 * 1024 * 1024).meta(
    doc(
      "bytes of resumable streams' events kept over all of one key's calls; past it the key's oldest abandoned stream is dropped first (per instance with REDIS_URL)",
    ),
  ),
  KEYGATE_RESUMABLE_MAX_BYTES_PER_ACCOUNT: bytes(128 * 1024 * 1024).meta(
    doc("the same over all of one account's calls"),
  ),
  KEYGATE_RESUMABLE_MAX_BYTES_TOTAL: bytes(512 * 1024 * 1024).meta(
    doc("the same over every account's calls"),
  ),
  KEYGATE_BODY_IDLE_MS: ms(30_000).meta(doc('a request body pausing this long gets 408')),
  KEYGATE_HEADERS_TIMEOUT_MS: ms(10_000).meta(
    doc(
      'a request line and headers not received within this long get 408 and the connection is closed (slowloris)',
    ),
  ),
  KEYGATE_REQUEST_TIMEOUT_MS: msOrZero(300_000).meta(
    doc(
      'a whole request (headers and body, not the answer) not received within this long gets 408; 0: no bound',
    ),
  ),
  KEYGATE_MAX_SOCKETS_PER_ADDRESS: z.coerce
    .number()
    .int()
    .positive()
    .default(256)
    .meta(doc('open connections one client address may hold; further ones get 429 and are closed')),
  KEYGATE_SHUTDOWN_GRACE_MS: msOrZero(30_000).meta(
    doc(
      'on SIGTERM, how long calls and streams in flight may run on before they are ended with an overloaded_error',
    ),
  ),
  KEYGATE_MAX_PDF_PAGES: z.coerce
    .number()
    .int()
    .positive()
    .default(100)
    .meta(doc("PDF pages per request before a 400 that points to the SDK's split helper")),
  KEYGATE_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024)
    .meta(doc('request size before 413')),
  KEYGATE_KEY_CACHE_TTL_MS: ms(30_000).meta(
    doc(
      'longest a resolved app key is served from memory before the database is asked again (a change evicts it on every instance within a second; while the database is unreachable, see KEYGATE_KEY_STALE_MAX_MS)',
    ),
  ),
  KEYGATE_KEY_STALE_MAX_MS: msOrZero(15 * 60_000).meta(
    doc(
      'while the database is unreachable, an app key it confirmed within this long is still served from memory (a key not held gets 503 with retry-after); also how long /readyz stays 200 (degraded) through the outage; 0: never',
    ),
  ),
  KEYGATE_FLUSH_INTERVAL_MS: ms(250).meta(
    doc('how often queued call records are written to the database, in batches'),
  ),
  KEYGATE_CALL_LOG_STATEMENT_TIMEOUT_MS: ms(5_000).meta(
    doc(
      'a call-log batch insert that PostgreSQL has not finished in this long (a lock, a stalled disk) is cancelled and retried; its records wait in the spool, and calls are served meanwhile',
    ),
  ),
  KEYGATE_OPEN_PASSTHROUGH: z
    .enum(['on', 'off'])
    .default('on')
    .meta(
      doc(
        "forwards any other `/v1/…` path to the provider with the account's key, never `/v1/organizations/…` or `/v1/vaults/…` in any spelling; `off` answers them 404",
      ),
    ),
  KEYGATE_MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(500 * 1024 * 1024)
    .meta(
      doc('largest file upload (`POST /v1/files`), counted while it streams; the provider allows 500 MB'),
    ),
  KEYGATE_MODELS_CACHE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60_000)
    .meta(
      doc(
        'how long the model list (`GET /v1/models`) is served from cache before the provider is asked again',
      ),
    ),
  KEYGATE_CALL_LOG: z
    .enum(['on', 'off'])
    .default('on')
    .meta(doc('keeps the call log; `off` is for benchmarks only')),
  KEYGATE_CALL_LOG_THREAD: z
    .enum(['on', 'off'])
    .default('on')
    .meta(
      doc(
        "writes the call log (spool and inserts) from a thread of its own, off the event loop that serves requests; `off` writes it from the gateway's own thread",
      ),
    ),
  KEYGATE_CALL_LOG_HANDOVER_MS: msOrZero(10).meta(
    doc(
      "how long a finished call waits to go to the call log's thread with the calls ending after it (one wake-up of the thread per batch, not per call; 64 calls go at once); 0 hands them over every turn of the event loop",
    ),
  ),
  KEYGATE_SPOOL_DIR: z
    .string()
    .min(1)
    .optional()
    .meta(
      doc(
        'local append-only spool of finished calls, replayed after a crash or an outage',
        '<data dir>/spool',
      ),
    ),
  KEYGATE_SPOOL_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024 ** 3)
    .meta(
      doc(
        'spool size bound in bytes; when full the gateway says so and keeps serving (0 turns the spool off)',
      ),
    ),
  KEYGATE_SPOOL_SYNC_MS: ms(50).meta(
    doc(
      "group commit: what the spool has written (at once, on the call log thread's next turn, so a killed process keeps it) is fdatasynced at most this long after a call ends; a power cut can lose calls that ended within it",
    ),
  ),
  KEYGATE_LOG_LEVEL: z
    .enum(['debug', 'info', 'warn', 'error', 'silent'])
    .default('info')
    .meta(doc('log lines (JSON on stderr) at this level and above')),
  KEYGATE_DB_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case PostgreSQL identifier (letters, digits, _)')
    .optional()
    .meta(doc("PostgreSQL schema of Keygate's tables (with `DATABASE_URL`)", '(search_path)')),
  REDIS_URL: z
    .url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' })
    .optional()
    .meta(
      doc(
        'shares rate-limit, spend-cap and budget counters across instances; without it each instance counts alone',
        '(none)',
      ),
    ),
  KEYGATE_LIMITS_ON_REDIS_DOWN: z
    .enum(['open', 'closed'])
    .default('open')
    .meta(
      doc(
        'while Redis is unreachable, rate limits and budgets are counted in this instance (`open`), or calls under a rate limit or a hard-capped budget are refused with 429 (`closed`)',
      ),
    ),
  KEYGATE_METRICS_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .meta(
      doc(
        'serves Prometheus metrics at `/metrics` to `Authorization: Bearer <token>` (also required on KEYGATE_METRICS_PORT when set)',
        '(off)',
      ),
    ),
  KEYGATE_METRICS_PORT: port()
    .optional()
    .meta(
      doc(
        'serves `/metrics` on this port of HOST too, without a token unless KEYGATE_METRICS_TOKEN is set; keep it off public networks',
        '(none)',
      ),
    ),
  KEYGATE_METRICS_MAX_ACCOUNTS: z.coerce
    .number()
    .int()
    .positive()
    .default(100)
    .meta(doc('distinct account labels in metrics; later accounts are counted as `other`')),
  KEYGATE_TRIAL_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .max(365)
    .optional()
    .meta(doc("trial length of new accounts, instead of each plan's", 'per plan (14)')),
  KEYGATE_INVALIDATION_POLL_MS: ms(250).meta(
    doc('safety-net poll for key changes (LISTEN/NOTIFY is the fast path)'),
  ),
  KEYGATE_WEBHOOK_POLL_MS: ms(1_000).meta(
    doc('safety-net poll for due webhook deliveries (a new alert wakes the workers at once)'),
  ),
  KEYGATE_WEBHOOK_RETRY_MS: ms(10_000).meta(
    doc("a failed webhook delivery's first retry; the delay doubles with each attempt, up to an hour"),
  ),
  KEYGATE_WEBHOOK_MAX_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50)
    .default(10)
    .meta(doc('attempts of a webhook delivery before it is marked failed')),
  KEYGATE_WEBHOOK_TIMEOUT_MS: ms(10_000).meta(
    doc('a webhook endpoint that has not answered in this long fails the attempt'),
  ),
  KEYGATE_WEBHOOK_MAX_ENDPOINTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(20)
    .meta(doc('webhook endpoints one account may register')),
  KEYGATE_EGRESS_ALLOW: z
    .string()
    .optional()
    .meta(
      doc(
        'comma-separated CIDRs, addresses or host names that webhooks may reach although private, loopback or link-local (receivers inside your network)',
        '(public addresses only)',
      ),
    ),
  KEYGATE_MEMBER_TOKEN_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(86_400_000)
    .default(3_600_000)
    .meta(
      doc(
        'life of a member token issued after a sign-in through the identity provider (`keygate token`); a refresh at the provider renews it',
      ),
    ),
  KEYGATE_IDP_REFRESH_IDLE_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .max(366 * 86_400_000)
    .default(30 * 86_400_000)
    .meta(
      doc(
        "a device sign-in (`keygate token`) not renewed for this long ends; Keygate's refresh token also changes on every renewal, and a spent one used again ends its sign-in",
      ),
    ),
  KEYGATE_ERROR_RATE_CHECK_MS: ms(10_000).meta(
    doc('how often each instance checks the error rate of accounts whose webhooks watch it'),
  ),
  KEYGATE_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .optional()
    .meta(
      doc(
        "CLI only: send every command to this gateway's operator API (with `KEYGATE_OPERATOR_TOKEN`)",
        '(none)',
      ),
    ),
  KEYGATE_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .optional()
    .meta(
      doc(
        "the gateway's address as customers reach it (Stripe Checkout returns there; batch `results_url`s name it)",
        'its listening address',
      ),
    ),
  KEYGATE_BILLING: z
    .enum(['on', 'off'])
    .default('on')
    .meta(
      doc(
        '`off`: every account is treated as paid (a gateway for your own team: no trial end, no 402, no invoices); `on`: trials end and payments fall due (Stripe, or `keygate account mark-paid` / `set-trial`)',
      ),
    ),
  KEYGATE_PRICE_FILE: z
    .string()
    .min(1)
    .optional()
    .meta(
      doc(
        "a JSON file of prices added to the bundled catalog: Keygate's operator rows, or LiteLLM's model_prices_and_context_window.json",
        '(none)',
      ),
    ),
  KEYGATE_PAYMENT_GRACE_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .max(90)
    .default(7)
    .meta(doc('days calls keep working after a payment falls due and fails')),
  KEYGATE_BILLING_CLOCK_MS: ms(60_000).meta(
    doc('how often each instance runs the billing clock (trial ends, grace, invoices)'),
  ),
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_(test|live)_[A-Za-z0-9]+$/, "must be a Stripe secret key ('sk_live_…' or 'sk_test_…')")
    .optional()
    .meta(
      doc(
        'Stripe secret key; without it the operator records payments (`keygate account mark-paid`)',
        '(self-hosting)',
      ),
    ),
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9]+$/, "must be a Stripe webhook signing secret ('whsec_…')")
    .optional()
    .meta(doc('Stripe webhook signing secret (required with `STRIPE_SECRET_KEY`)', '(none)')),
  STRIPE_API_HOST: z
    .string()
    .min(1)
    .optional()
    .meta(doc('Stripe API host override (tests point it at a loopback stand-in)', "Stripe's")),
  STRIPE_API_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .optional()
    .meta(doc('Stripe API port override', "Stripe's")),
  STRIPE_API_PROTOCOL: z
    .enum(['http', 'https'])
    .optional()
    .meta(doc('Stripe API protocol override', "Stripe's")),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  /** KEYGATE_PRICE_FILE: prices added to the bundled catalog. */
  priceFile: string | null;
  port: number;
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  secret: string | null;
  /** Opens values sealed before v2 with an earlier (weak) secret, so they can be re-sealed. */
  previousSecret: string | null;
  upstreamUrl: string;
  operatorToken: string | null;
  upstreamTimeoutMs: number;
  /** Processes `keygate serve` runs; null = 1. */
  workers: number | null;
  /** SSE comment line after this much silence toward a client; 0: none. */
  sseKeepAliveMs: number;
  /** How long and how many bytes of a resumable stream's events are kept, per call and summed. */
  resumable: { ttlMs: number; maxBytes: number; caps: { perKey: number; perAccount: number; total: number } };
  bodyIdleMs: number;
  headersTimeoutMs: number;
  /** 0: no bound. */
  requestTimeoutMs: number;
  maxSocketsPerAddress: number;
  shutdownGraceMs: number;
  maxPdfPages: number;
  maxBodyBytes: number;
  keyCacheTtlMs: number;
  /** How long past its last confirmation a key is served from memory while the database is away (0: never). */
  keyStaleMaxMs: number;
  flushIntervalMs: number;
  callLog: boolean;
  /** The call log is written from its own worker thread (call-log/thread.ts). */
  callLogThread: boolean;
  /** Milliseconds a finished call waits to be handed to the call log's thread with others (0: every turn of the event loop). */
  callLogHandOverMs: number;
  openPassthrough: boolean;
  maxFileBytes: number;
  modelsCacheMs: number;
  callLogStatementTimeoutMs: number;
  /** The call log's local spool (default `<dataDir>/spool`): each record is appended there before it counts as recorded. */
  spoolDir: string;
  /** Bound on the spool's size on disk; past it new records wait in memory only (and `status().spoolFull` says so). 0 turns the spool off. */
  spoolMaxBytes: number;
  /** Group commit: spooled records are written and fdatasync'ed once per this interval; a call counts as recorded when that completes. */
  spoolSyncMs: number;
  logLevel: Env['KEYGATE_LOG_LEVEL'];
  /** The PostgreSQL schema Keygate's tables live in (DATABASE_URL only); null = the default search_path. */
  dbSchema: string | null;
  /** Shared rate-limit and spend counters for several instances; null = in-memory counters. */
  redisUrl: string | null;
  limitsOnRedisDown: Env['KEYGATE_LIMITS_ON_REDIS_DOWN'];
  /** Metrics are collected only when one of token or port is set. */
  metricsToken: string | null;
  metricsPort: number | null;
  metricsMaxAccounts: number;
  /** Overrides every plan's trial length; null = the plan's own. */
  trialDays: number | null;
  invalidationPollMs: number;
  /** Where the CLI finds a running gateway's operator API; null = the database directly. */
  gatewayUrl: string | null;
  webhooks: { pollMs: number; retryMs: number; maxAttempts: number; timeoutMs: number; maxEndpoints: number };
  /** KEYGATE_EGRESS_ALLOW's entries: what outbound requests aimed by accounts may reach beyond public addresses. */
  egressAllow: string[];
  /** KEYGATE_MEMBER_TOKEN_TTL_MS. */
  memberTokenTtlMs: number;
  /** KEYGATE_IDP_REFRESH_IDLE_MS. */
  idpRefreshIdleMs: number;
  errorRateCheckMs: number;
  /** The gateway's address as customers reach it (Stripe Checkout returns there); null = its listening address. */
  publicUrl: string | null;
  /** False (`KEYGATE_BILLING=off`): every account is treated as paid; no trial ends, no call is refused for payment. */
  billingEnforced: boolean;
  /** Days calls keep working after a payment falls due and fails. */
  paymentGraceDays: number;
  /** How often each instance runs the billing clock (trial ends, grace, invoices). */
  billingClockMs: number;
  /** Null without STRIPE_SECRET_KEY: self-hosting, where the operator records payments. */
  stripe: {
    secretKey: string;
    webhookSecret: string;
    host: string | null;
    port: number | null;
    protocol: 'http' | 'https' | null;
  } | null;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function egressAllow(list: string | undefined): string[] {
  try {
    return EgressPolicy.parseList(list);
  } catch {
    throw new ConfigError(
      'Invalid configuration:\n  KEYGATE_EGRESS_ALLOW: must be comma-separated CIDRs (10.0.0.0/8), addresses or host names',
    );
  }
}

/** Parses the environment once; every bad value is named with what it should be. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.DATABASE_URL && !e.KEYGATE_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  KEYGATE_SECRET: required with DATABASE_URL (it encrypts provider keys at rest; use 32+ random characters)',
    );
  }
  if (e.STRIPE_SECRET_KEY && !e.STRIPE_WEBHOOK_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  STRIPE_WEBHOOK_SECRET: required with STRIPE_SECRET_KEY (webhook events are verified with it)',
    );
  }
  if (e.STRIPE_SECRET_KEY && e.KEYGATE_BILLING === 'off') {
    throw new ConfigError(
      'Invalid configuration:\n  KEYGATE_BILLING: `off` treats every account as paid, so it cannot go with STRIPE_SECRET_KEY (unset one of them)',
    );
  }
  if (e.KEYGATE_REQUEST_TIMEOUT_MS > 0 && e.KEYGATE_REQUEST_TIMEOUT_MS < e.KEYGATE_HEADERS_TIMEOUT_MS) {
    throw new ConfigError(
      'Invalid configuration:\n  KEYGATE_REQUEST_TIMEOUT_MS: must be 0 or at least KEYGATE_HEADERS_TIMEOUT_MS (the headers are part of the request)',
    );
  }
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL ?? null,
    dataDir: resolveDataDir(cleaned.KEYGATE_DATA_DIR),
    secret: e.KEYGATE_SECRET ?? null,
    previousSecret: e.KEYGATE_SECRET_PREVIOUS ?? null,
    upstreamUrl: e.KEYGATE_UPSTREAM_URL.replace(/\/+$/, ''),
    operatorToken: e.KEYGATE_OPERATOR_TOKEN ?? null,
    upstreamTimeoutMs: e.KEYGATE_UPSTREAM_TIMEOUT_MS,
    workers: e.KEYGATE_WORKERS ?? null,
    sseKeepAliveMs: e.KEYGATE_SSE_KEEPALIVE_MS,
    resumable: {
      ttlMs: e.KEYGATE_RESUMABLE_TTL_MS,
      maxBytes: e.KEYGATE_RESUMABLE_MAX_BYTES,
      caps: {
        perKey: e.KEYGATE_RESUMABLE_MAX_BYTES_PER_KEY,
        perAccount: e.KEYGATE_RESUMABLE_MAX_BYTES_PER_ACCOUNT,
        total: e.KEYGATE_RESUMABLE_MAX_BYTES_TOTAL,
      },
    },
    bodyIdleMs: e.KEYGATE_BODY_IDLE_MS,
    headersTimeoutMs: e.KEYGATE_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: e.KEYGATE_REQUEST_TIMEOUT_MS,
    maxSocketsPerAddress: e.KEYGATE_MAX_SOCKETS_PER_ADDRESS,
    shutdownGraceMs: e.KEYGATE_SHUTDOWN_GRACE_MS,
    maxPdfPages: e.KEYGATE_MAX_PDF_PAGES,
    maxBodyBytes: e.KEYGATE_MAX_BODY_BYTES,
    keyCacheTtlMs: e.KEYGATE_KEY_CACHE_TTL_MS,
    keyStaleMaxMs: e.KEYGATE_KEY_STALE_MAX_MS,
    flushIntervalMs: e.KEYGATE_FLUSH_INTERVAL_MS,
    callLog: e.KEYGATE_CALL_LOG === 'on',
    callLogThread: e.KEYGATE_CALL_LOG_THREAD === 'on',
    callLogHandOverMs: e.KEYGATE_CALL_LOG_HANDOVER_MS,
    openPassthrough: e.KEYGATE_OPEN_PASSTHROUGH === 'on',
    maxFileBytes: e.KEYGATE_MAX_FILE_BYTES,
    modelsCacheMs: e.KEYGATE_MODELS_CACHE_MS,
    callLogStatementTimeoutMs: e.KEYGATE_CALL_LOG_STATEMENT_TIMEOUT_MS,
    spoolDir: e.KEYGATE_SPOOL_DIR ?? join(e.KEYGATE_DATA_DIR, 'spool'),
    spoolMaxBytes: e.KEYGATE_SPOOL_MAX_BYTES,
    spoolSyncMs: e.KEYGATE_SPOOL_SYNC_MS,
    logLevel: e.KEYGATE_LOG_LEVEL,
    dbSchema: e.KEYGATE_DB_SCHEMA ?? null,
    redisUrl: e.REDIS_URL ?? null,
    limitsOnRedisDown: e.KEYGATE_LIMITS_ON_REDIS_DOWN,
    metricsToken: e.KEYGATE_METRICS_TOKEN ?? null,
    metricsPort: e.KEYGATE_METRICS_PORT ?? null,
    metricsMaxAccounts: e.KEYGATE_METRICS_MAX_ACCOUNTS,
    trialDays: e.KEYGATE_TRIAL_DAYS ?? null,
    invalidationPollMs: e.KEYGATE_INVALIDATION_POLL_MS,
    gatewayUrl: e.KEYGATE_URL?.replace(/\/+$/, '') ?? null,
    webhooks: {
      pollMs: e.KEYGATE_WEBHOOK_POLL_MS,
      retryMs: e.KEYGATE_WEBHOOK_RETRY_MS,
      maxAttempts: e.KEYGATE_WEBHOOK_MAX_ATTEMPTS,
      timeoutMs: e.KEYGATE_WEBHOOK_TIMEOUT_MS,
      maxEndpoints: e.KEYGATE_WEBHOOK_MAX_ENDPOINTS,
    },
    egressAllow: egressAllow(e.KEYGATE_EGRESS_ALLOW),
    memberTokenTtlMs: e.KEYGATE_MEMBER_TOKEN_TTL_MS,
    idpRefreshIdleMs: e.KEYGATE_IDP_REFRESH_IDLE_MS,
    errorRateCheckMs: e.KEYGATE_ERROR_RATE_CHECK_MS,
    publicUrl: e.KEYGATE_PUBLIC_URL?.replace(/\/+$/, '') ?? null,
    billingEnforced: e.KEYGATE_BILLING === 'on',
    paymentGraceDays: e.KEYGATE_PAYMENT_GRACE_DAYS,
    priceFile: e.KEYGATE_PRICE_FILE ?? null,
    billingClockMs: e.KEYGATE_BILLING_CLOCK_MS,
    stripe: e.STRIPE_SECRET_KEY
      ? {
          secretKey: e.STRIPE_SECRET_KEY,
          webhookSecret: e.STRIPE_WEBHOOK_SECRET!,
          host: e.STRIPE_API_HOST ?? null,
          port: e.STRIPE_API_PORT ?? null,
          protocol: e.STRIPE_API_PROTOCOL ?? null,
        }
      : null,
  };
}
