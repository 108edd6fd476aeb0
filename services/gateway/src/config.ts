import { join } from 'node:path';
import { z } from 'zod';

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }).optional(),
  KEYGATE_DATA_DIR: z.string().min(1).default('.keygate'),
  KEYGATE_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  KEYGATE_UPSTREAM_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.anthropic.com'),
  KEYGATE_OPERATOR_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  KEYGATE_UPSTREAM_TIMEOUT_MS: ms(600_000),
  KEYGATE_BODY_IDLE_MS: ms(30_000),
  KEYGATE_MAX_PDF_PAGES: z.coerce.number().int().positive().default(100),
  KEYGATE_MAX_BODY_BYTES: z.coerce.number().int().positive().default(32 * 1024 * 1024),
  KEYGATE_KEY_CACHE_TTL_MS: ms(30_000),
  KEYGATE_FLUSH_INTERVAL_MS: ms(250),
  KEYGATE_CALL_LOG: z.enum(['on', 'off']).default('on'),
  KEYGATE_SPOOL_DIR: z.string().min(1).optional(),
  KEYGATE_SPOOL_MAX_BYTES: z.coerce.number().int().min(0).default(1024 ** 3),
  KEYGATE_SPOOL_SYNC_MS: ms(50),
  KEYGATE_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  KEYGATE_DB_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case PostgreSQL identifier (letters, digits, _)')
    .optional(),
  REDIS_URL: z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' }).optional(),
  KEYGATE_TRIAL_DAYS: z.coerce.number().int().min(0).max(365).optional(),
  KEYGATE_INVALIDATION_POLL_MS: ms(250),
  KEYGATE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  secret: string | null;
  upstreamUrl: string;
  operatorToken: string | null;
  upstreamTimeoutMs: number;
  bodyIdleMs: number;
  maxPdfPages: number;
  maxBodyBytes: number;
  keyCacheTtlMs: number;
  flushIntervalMs: number;
  callLog: boolean;
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
  /** Overrides every plan's trial length; null = the plan's own. */
  trialDays: number | null;
  invalidationPollMs: number;
  /** Where the CLI finds a running gateway's operator API; null = the database directly. */
  gatewayUrl: string | null;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
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
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL ?? null,
    dataDir: e.KEYGATE_DATA_DIR,
    secret: e.KEYGATE_SECRET ?? null,
    upstreamUrl: e.KEYGATE_UPSTREAM_URL.replace(/\/+$/, ''),
    operatorToken: e.KEYGATE_OPERATOR_TOKEN ?? null,
    upstreamTimeoutMs: e.KEYGATE_UPSTREAM_TIMEOUT_MS,
    bodyIdleMs: e.KEYGATE_BODY_IDLE_MS,
    maxPdfPages: e.KEYGATE_MAX_PDF_PAGES,
    maxBodyBytes: e.KEYGATE_MAX_BODY_BYTES,
    keyCacheTtlMs: e.KEYGATE_KEY_CACHE_TTL_MS,
    flushIntervalMs: e.KEYGATE_FLUSH_INTERVAL_MS,
    callLog: e.KEYGATE_CALL_LOG === 'on',
    spoolDir: e.KEYGATE_SPOOL_DIR ?? join(e.KEYGATE_DATA_DIR, 'spool'),
    spoolMaxBytes: e.KEYGATE_SPOOL_MAX_BYTES,
    spoolSyncMs: e.KEYGATE_SPOOL_SYNC_MS,
    logLevel: e.KEYGATE_LOG_LEVEL,
    dbSchema: e.KEYGATE_DB_SCHEMA ?? null,
    redisUrl: e.REDIS_URL ?? null,
    trialDays: e.KEYGATE_TRIAL_DAYS ?? null,
    invalidationPollMs: e.KEYGATE_INVALIDATION_POLL_MS,
    gatewayUrl: e.KEYGATE_URL?.replace(/\/+$/, '') ?? null,
  };
}
