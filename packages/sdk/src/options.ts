import type { ClientOptions } from '@anthropic-ai/sdk';
import { z } from 'zod';
import { KeygateError } from './errors';
import type { UsageTracker } from './usage-tracker';
import type { UsageRecord } from './usage-types';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';
export const GROUP_HEADER = 'keygate-group-id';

/** What the gateway accepts in `keygate-group-id`. */
const GROUP_ID = /^[\x21-\x7e]{1,128}$/;

/** Every option of the official client, plus Keygate's own. */
export interface KeygateOptions extends ClientOptions {
  /** The app key (`kg_live_…` or `kg_test_…`). Defaults to `process.env.KEYGATE_APP_KEY`. */
  appKey?: string | undefined;
  /**
   * The gateway's URL. Defaults to `process.env.KEYGATE_BASE_URL`, else `http://127.0.0.1:8080`.
   * `ANTHROPIC_BASE_URL` is not read: it usually points at the provider.
   */
  baseURL?: string | null | undefined;
  /** Called once per API call, when its response has ended, with what it consumed. */
  onUsage?: ((record: UsageRecord) => void) | undefined;
  /** Share one tracker between clients; by default each client (and its copies) has its own. */
  usage?: UsageTracker | undefined;
  /** Sends `keygate-group-id` on every call; `client.group()` sets it for you. */
  groupId?: string | null | undefined;
  /**
   * Streams pick up where they broke off after a dropped connection: the gateway keeps a
   * stream's events, and the SDK fetches the rest on its own. `true` asks the gateway to keep
   * every streaming call (`keygate-resumable: true`) and allows 3 resumptions per stream, a
   * number that many; `false` (or 0) tells it not to (`keygate-resumable: false`). Unset, the
   * key decides: a key created with resumable streams has them kept, and the SDK resumes them
   * (3 times at most). A kept stream is read to its end by the gateway even when the app aborts
   * it, so it is billed whole.
   */
  resumeStreams?: boolean | number | undefined;
}

const ExtraOptions = z.object({
  appKey: z.string().min(1, 'must not be empty').optional(),
  baseURL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).nullish(),
  onUsage: z
    .custom<(record: UsageRecord) => void>((v) => typeof v === 'function', 'must be a function')
    .optional(),
  groupId: z.string().regex(GROUP_ID, 'must be 1 to 128 visible ASCII characters').nullish(),
  resumeStreams: z.union([z.boolean(), z.number().int().min(0).max(100)]).optional(),
});

export interface ResolvedAuth {
  /** The credential handed to the official client: a static key, or the caller's key function. */
  authToken: string | null;
  apiKey: (() => Promise<string>) | null;
}

/** Validates Keygate's own options, failing with one message that names every bad value. */
export function checkExtraOptions(opts: KeygateOptions): void {
  const parsed = ExtraOptions.safeParse({
    appKey: opts.appKey,
    baseURL: opts.baseURL,
    onUsage: opts.onUsage,
    groupId: opts.groupId,
    resumeStreams: opts.resumeStreams,
  });
  if (parsed.success) return;
  const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
  throw new KeygateError('invalid_option', `Invalid Keygate options:\n${lines.join('\n')}`);
}

/**
 * The app key from `appKey`, else `apiKey` / `authToken` (so code written for the official client
 * keeps working), else `KEYGATE_APP_KEY`. Provider credentials from the environment are never read.
 */
export function resolveAuth(opts: KeygateOptions, env: Record<string, string | undefined>): ResolvedAuth {
  for (const name of ['credentials', 'config', 'profile'] as const) {
    if (opts[name] != null) {
      throw new KeygateError(
        'unsupported_option',
        `Keygate authenticates with an app key; the \`${name}\` option is not supported. Pass appKey (or set KEYGATE_APP_KEY).`,
      );
    }
  }
  const given = (['appKey', 'apiKey', 'authToken'] as const).filter((name) => opts[name] != null);
  if (given.length > 1) {
    throw new KeygateError(
      'invalid_option',
      `Pass the app key once: got ${given.map((n) => `\`${n}\``).join(' and ')}. Use \`appKey\`.`,
    );
  }
  const setter = opts.apiKey;
  if (typeof setter === 'function') {
    return { authToken: null, apiKey: async () => checkAppKey(await setter(), 'apiKey()') };
  }
  const key = opts.appKey ?? setter ?? opts.authToken ?? env.KEYGATE_APP_KEY;
  if (!key) {
    const hint = env.ANTHROPIC_API_KEY
      ? ' ANTHROPIC_API_KEY is set, but Keygate never sends provider keys.'
      : '';
    throw new KeygateError(
      'missing_app_key',
      `No Keygate app key: pass \`appKey\` or set KEYGATE_APP_KEY to a kg_live_… or kg_test_… key.${hint} Keys are created with \`keygate key create\` or in the dashboard.`,
    );
  }
  const source = opts.appKey
    ? 'appKey'
    : opts.apiKey
      ? 'apiKey'
      : opts.authToken
        ? 'authToken'
        : 'KEYGATE_APP_KEY';
  return { authToken: checkAppKey(key, source), apiKey: null };
}

/** Refuses credentials that must never be sent to a gateway as an app key. */
export function checkAppKey(key: string, source: string): string {
  if (key.startsWith('sk-ant-')) {
    throw new KeygateError(
      'provider_key',
      `${source} holds an Anthropic provider key (sk-ant-…). Keygate clients send an app key (kg_live_… or kg_test_…); the provider key stays in the gateway. Create an app key with \`keygate key create\`.`,
    );
  }
  if (key.startsWith('kg_admin_')) {
    throw new KeygateError(
      'admin_key',
      `${source} holds an admin key (kg_admin_…), which manages an account but cannot call models. Use a kg_live_… or kg_test_… app key.`,
    );
  }
  if (/\s/.test(key)) throw new KeygateError('invalid_option', `${source}: the app key contains whitespace.`);
  return key;
}

export function resolveBaseURL(opts: KeygateOptions, env: Record<string, string | undefined>): string {
  return opts.baseURL || env.KEYGATE_BASE_URL || DEFAULT_BASE_URL;
}

/** A group id the gateway accepts: `grp_` and 20 random hex characters. */
export function newGroupId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  return `grp_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export function checkGroupId(id: string): string {
  if (!GROUP_ID.test(id))
    throw new KeygateError(
      'invalid_option',
      `group id ${JSON.stringify(id)}: must be 1 to 128 visible ASCII characters.`,
    );
  return id;
}

export function processEnv(): Record<string, string | undefined> {
  return typeof process === 'undefined' ? {} : process.env;
}
