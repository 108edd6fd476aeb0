import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { usageFigures } from '../usage/usage';
import type { BucketSpec, Buckets, TakeResult } from './buckets';
import type { Estimate } from './estimate';
import type { LimitSubject } from './subjects';

const MINUTE = 60_000;

/**
 * A key's rate limits in the provider's shape (https://docs.claude.com/en/api/rate-limits, read
 * 2026-11-29): requests, input tokens and output tokens per minute, each a token bucket that
 * refills continuously. Input tokens are counted as the provider counts them: uncached input and
 * cache writes count, cache reads do not ("for most Claude models, only uncached input tokens
 * count towards your ITPM rate limits"). Output tokens are held at admission and adjusted to the
 * real count when the call ends, as the provider does with its OTPM estimate. `tpm`, Keygate's
 * older combined limit, counts both, the same way.
 */
export type TokenLimit = 'input' | 'output' | 'total';
type Kind = TokenLimit | 'requests';

type Held = Record<TokenLimit, number>;

/** What a call took from each of its subjects' token buckets (same order as `subjects`). */
interface TokenHold {
  subjects: readonly LimitSubject[];
  held: Held[];
}

const LIMIT = { input: 'itpm', output: 'otpm', total: 'tpm' } as const;
const TOKEN_LIMITS = ['input', 'output', 'total'] as const;
/** The provider's header family and the words a refusal uses, per limit. */
const NAMES = {
  requests: ['requests', 'requests'],
  input: ['input-tokens', 'input tokens'],
  output: ['output-tokens', 'output tokens'],
  total: ['tokens', 'tokens'],
} as const;

const tokenLimited = (s: LimitSubject): boolean =>
  s.limits.itpm != null || s.limits.otpm != null || s.limits.tpm != null;

/** One bucket's answer, with whose limit it is. */
interface Look {
  subject: LimitSubject;
  kind: Kind;
  limit: number;
  r: TakeResult;
}

/**
 * The buckets shared through `buckets`, one per subject (key, member, group, account) and kind:
 * a call takes what it is expected to use from every limit that applies when admitted (at most
 * a whole bucket; all or none) and settles at what it used, so the limits hold as the provider's do.
 */
export class RateLimits {
  readonly #buckets: Buckets;
  readonly #clock: () => number;
  readonly #logger: Logger;
  /** The token-limited subjects of each key's calls, as last admitted: calls without a hold are charged to them. */
  readonly #limited = new Map<string, readonly LimitSubject[]>();
  readonly #holds = new Map<string, TokenHold>();

  constructor(buckets: Buckets, clock: () => number, logger: Logger) {
    this.#buckets = buckets;
    this.#clock = clock;
    this.#logger = logger;
  }

  /**
   * Before the body: is a request left under every limit, and a token of each token limit?
   * Throws the 429 of the limit that frees last. With in-memory buckets it answers at once, with
   * no promise (one per call was most of this path's cost); with Redis, after one round trip's wait.
   */
  check(keyId: string, subjects: readonly LimitSubject[]): void | Promise<void> {
    // Limits can be removed while the key is in use: stop charging it as soon as they are.
    const limited = subjects.filter(tokenLimited);
    if (limited.length > 0) this.#limited.set(keyId, limited);
    else if (this.#limited.size > 0) this.#limited.delete(keyId);
    const now = this.#clock();
    // The token limits are looked at together, before a request is taken.
    const tokens = this.#takeAll(subjects, TOKEN_LIMITS, () => [0, 1], now);
    return then(all(tokens.map((t) => t.r)), (rs) => {
      const refused = worst(tokens, rs);
      if (refused) throw limited_(refused, now, 1);
      const requests = this.#takeAll(subjects, ['requests'], () => [1, 1], now);
      return then(all(requests.map((t) => t.r)), (rs2) => {
        const no = worst(requests, rs2);
        if (!no) return;
        requests.forEach((t, i) => {
          if (rs2[i]!.ok) this.#take(t.subject, 'requests', t.limit, -1, now);
        });
        throw limited_(no, now, 1);
      });
    });
  }

  /**
   * Takes the call's expected tokens from each token limit of each subject (all or none; a call
   * larger than a limit waits for the whole bucket) or throws the 429. Answers the
   * `anthropic-ratelimit-*` headers of the tightest limit of each kind, with this call admitted.
   */
  reserve(
    callId: string,
    subjects: readonly LimitSubject[],
    e: Estimate,
  ): Record<string, string> | Promise<Record<string, string>> {
    const now = this.#clock();
    const want: Held = {
      input: e.inputTokens,
      output: e.outputTokens,
      total: e.inputTokens + e.outputTokens,
    };
    // All takes at once (one round trip's wait with Redis); what was taken goes back if one refuses.
    const requests = this.#takeAll(subjects, ['requests'], () => [0, -Infinity], now);
    const tokens = this.#takeAll(
      subjects,
      TOKEN_LIMITS,
      (kind, limit) => {
        const n = Math.min(want[kind as TokenLimit], limit);
        return [n, n];
      },
      now,
    );
    return then(all([...requests, ...tokens].map((t) => t.r)), (rs) => {
      const rr = rs.slice(0, requests.length);
      const tr = rs.slice(requests.length);
      const held = subjects.map((): Held => ({ input: 0, output: 0, total: 0 }));
      tokens.forEach((t, i) => {
        if (tr[i]!.ok)
          held[subjects.indexOf(t.subject)]![t.kind as TokenLimit] = Math.min(
            want[t.kind as TokenLimit],
            t.limit,
          );
      });
      const refused = worst(tokens, tr);
      if (refused) {
        subjects.forEach((s, i) => this.#charge(s, negate(held[i]!)));
        throw limited_(
          refused,
          now,
          Math.min(want[refused.kind as TokenLimit], refused.limit),
          want[refused.kind as TokenLimit],
        );
      }
      if (subjects.some(tokenLimited)) this.#holds.set(callId, { subjects, held });
      return rateHeaders(
        [...requests.map((t, i) => ({ ...t, r: rr[i]! })), ...tokens.map((t, i) => ({ ...t, r: tr[i]! }))],
        now,
      );
    });
  }

  /** Charges a finished call's tokens: what it used beyond its hold, or gives back what it held and did not use. */
  settle(record: CallRecord): void {
    const hold = this.#holds.size > 0 ? this.#holds.get(record.id) : undefined;
    if (hold) this.#holds.delete(record.id);
    const subjects =
      hold?.subjects ??
      (record.keyId && this.#limited.size > 0 ? this.#limited.get(record.keyId) : undefined);
    if (!subjects || !record.keyId) return;
    const u = usageFigures(record.usage);
    const input = u.inputTokens + u.cacheCreationInputTokens;
    const used: Held = { input, output: u.outputTokens, total: input + u.outputTokens };
    subjects.forEach((s, i) => {
      const held = hold?.held[i] ?? { input: 0, output: 0, total: 0 };
      this.#charge(s, {
        input: used.input - held.input,
        output: used.output - held.output,
        total: used.total - held.total,
      });
    });
  }

  /** One take per subject and kind that has a limit; `how` gives the cost and minimum. */
  #takeAll(
    subjects: readonly LimitSubject[],
    kinds: readonly Kind[],
    how: (kind: Kind, limit: number) => [number, number],
    now: number,
  ): { subject: LimitSubject; kind: Kind; limit: number; r: Maybe<TakeResult> }[] {
    const out: { subject: LimitSubject; kind: Kind; limit: number; r: Maybe<TakeResult> }[] = [];
    for (const subject of subjects)
      for (const kind of kinds) {
        const limit = subject.limits[kind === 'requests' ? 'rpm' : LIMIT[kind]];
        if (limit == null) continue;
        const [cost, minimum] = how(kind, limit);
        out.push({
          subject,
          kind,
          limit,
          r: this.#buckets.take(bucket(kind, subject, limit), cost, minimum, now),
        });
      }
    return out;
  }

  #take(subject: LimitSubject, kind: Kind, limit: number, cost: number, now: number): void {
    try {
      const taken = this.#buckets.take(bucket(kind, subject, limit), cost, -Infinity, now);
      if (taken instanceof Promise) taken.catch(this.#chargeFailed);
    } catch (error) {
      this.#chargeFailed(error);
    }
  }

  #charge(subject: LimitSubject, charge: Held): void {
    const now = this.#clock();
    for (const kind of TOKEN_LIMITS) {
      const limit = subject.limits[LIMIT[kind]];
      if (limit == null || charge[kind] === 0) continue;
      this.#take(subject, kind, limit, charge[kind], now);
    }
  }

  // Charges happen after the answer: a failure must not become an unhandled rejection.
  readonly #chargeFailed = (error: unknown): void =>
    this.#logger.warn('charging a call to its rate limits failed', { error });
}

const negate = (h: Held): Held => ({ input: -h.input, output: -h.output, total: -h.total });

/** Of the refused looks, the one that frees last: retrying before it would be refused again. */
function worst(looks: readonly Omit<Look, 'r'>[], rs: readonly TakeResult[]): Look | null {
  let out: Look | null = null;
  looks.forEach((l, i) => {
    const r = rs[i]!;
    if (!r.ok && (!out || r.retryAfterMs > out.r.retryAfterMs)) out = { ...l, r };
  });
  return out;
}

const PREFIX = { requests: 'rpm', input: 'itpm', output: 'otpm', total: 'tpm' } as const;

/**
 * A key's buckets keep their names of before; other subjects' names carry their scope. Made once
 * per subject and kind (subjects are kept per principal): a name built per take was hashed anew
 * on every lookup. With the in-place bucket update (buckets.ts) admission went from 55 to 9 µs
 * of CPU a call, in process, for a key, its member and the account limited.
 */
const specs = new WeakMap<LimitSubject, Partial<Record<Kind, BucketSpec>>>();
const bucket = (kind: Kind, s: LimitSubject, capacity: number): BucketSpec => {
  let mine = specs.get(s);
  if (mine === undefined) specs.set(s, (mine = {}));
  const known = mine[kind];
  if (known !== undefined && known.capacity === capacity) return known;
  const key = s.scope === 'api_key' ? `${PREFIX[kind]}:${s.id}` : `${PREFIX[kind]}:${s.scope}:${s.id}`;
  return (mine[kind] = { key, capacity, periodMs: MINUTE });
};

/**
 * RFC 3339 to the second, as the provider writes its reset times (toISOString's milliseconds cut).
 * Every answer carries up to four of them and they fall on few distinct seconds: the last few
 * are kept (formatting a Date was 2% of a call's CPU at saturation, bench/profile.ts).
 */
const stamps = new Map<number, string>();
const rfc3339 = (t: number): string => {
  const second = Math.floor(t / 1000);
  let text = stamps.get(second);
  if (text === undefined) {
    text = `${new Date(second * 1000).toISOString().slice(0, 19)}Z`;
    if (stamps.size >= 16) stamps.delete(stamps.keys().next().value!);
    stamps.set(second, text);
  }
  return text;
};

/** Each kind's three header names, made once. */
const HEADER_NAMES = Object.fromEntries(
  Object.entries(NAMES).map(([kind, [name]]) => [
    kind,
    [
      `anthropic-ratelimit-${name}-limit`,
      `anthropic-ratelimit-${name}-remaining`,
      `anthropic-ratelimit-${name}-reset`,
    ],
  ]),
) as unknown as Record<Kind, readonly [string, string, string]>;

/** The provider's three headers of one limit, written into `out`. */
function headerSet(
  kind: Kind,
  limit: number,
  r: TakeResult,
  now: number,
  out: Record<string, string> = {},
): Record<string, string> {
  const [limitName, remainingName, resetName] = HEADER_NAMES[kind];
  out[limitName] = String(limit);
  out[remainingName] = String(Math.max(0, Math.floor(r.remaining)));
  out[resetName] = rfc3339(now + r.resetMs);
  return out;
}

type Maybe<T> = T | Promise<T>;
/** Promise.all only where one of them is a promise: in-memory buckets answer at once. */
const all = <T>(xs: Maybe<T>[]): Maybe<T[]> =>
  xs.some((x) => x instanceof Promise) ? Promise.all(xs) : (xs as T[]);
const then = <T, U>(x: Maybe<T>, f: (t: T) => Maybe<U>): Maybe<U> =>
  x instanceof Promise ? x.then(f) : f(x);

/**
 * The provider's headers for the tightest limit of each kind that applies (the least left, of
 * the key's, the member's, the groups' and the account's); `tokens-*` is the most restrictive
 * token limit in effect (the provider's definition), the key's combined one if it has it.
 */
function rateHeaders(looks: readonly Look[], now: number): Record<string, string> {
  const tightest = new Map<Kind, Look>();
  for (const l of looks) {
    const t = tightest.get(l.kind);
    if (!t || l.r.remaining < t.r.remaining) tightest.set(l.kind, l);
  }
  const out: Record<string, string> = {};
  let tokens: Look | null = null;
  for (const l of tightest.values()) {
    headerSet(l.kind, l.limit, l.r, now, out);
    if ((l.kind === 'input' || l.kind === 'output') && (!tokens || l.r.remaining < tokens.r.remaining))
      tokens = l;
  }
  if (tokens && !tightest.has('total')) headerSet('total', tokens.limit, tokens.r, now, out);
  return out;
}

/** Whose limit it is, in a refusal's words. */
function whose(s: LimitSubject): string {
  const plan = s.source === 'plan' ? " (the plan's default for members)" : '';
  if (s.scope === 'api_key') return "This key's rate limit";
  if (s.scope === 'user') return `This member's rate limit${plan}`;
  if (s.scope === 'rbac_group') return `The rate limit of group ${s.id}`;
  return "This account's rate limit";
}

/**
 * 429 naming the limit and whose it is (key, member, group, account), what the call needs and
 * what is left, with `retry-after` set to when the bucket has refilled enough for it (at least
 * 1 s), and the provider's headers for the limit.
 */
function limited_(look: Look, now: number, needed: number, expected = needed): GatewayError {
  const { kind, limit, r, subject } = look;
  const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  const words = NAMES[kind][1];
  const left = Math.max(0, Math.floor(r.remaining));
  const what =
    kind === 'requests'
      ? `${whose(subject)} of ${limit} requests per minute is reached.`
      : `${whose(subject)} of ${limit} ${words} per minute cannot take this call now: it is expected to use about ${expected} ${words}${kind === 'output' ? '' : ' (cache reads are not counted)'}, and ${left} are left with the calls in flight.`;
  const rule = kind === 'total' ? 'tokens' : kind === 'requests' ? 'requests' : `${kind}_tokens`;
  return new GatewayError(
    'rate_limit_error',
    `${what} Capacity frees in ${retryAfter} s (retry then). An admin of this account can raise the limit.`,
    {
      // The key's own rule keeps its name of before; others name their scope and id.
      reason:
        subject.scope === 'api_key'
          ? `rate_limit:${rule}`
          : `rate_limit:${rule}:${subject.scope}:${subject.id}`,
      headers: {
        'retry-after': String(retryAfter),
        ...headerSet(kind, limit, r, now),
        ...(kind === 'requests' ? {} : headerSet('total', limit, r, now)),
      },
    },
  );
}
