import { databaseUnreachable, GatewayError } from '../lib/errors';
import { compilePolicy, type ModelPolicy } from '../lib/model-policy';
import type { SecretBox } from '../lib/secret-box';
import { DatabaseWatch, type Store } from '../store';
import type { AccountRecord } from '../tenancy/account-queries';
import type { KeyRecord, ResolvedKey } from '../tenancy/key-queries';
import { FailedAttempts } from './attempts';
import { hashKeyHex, type KeyKind } from './keys';
import { checkActive, presentedKind } from './refusals';

/** Who is calling, resolved from an app key; everything the hot path needs, in memory. */
export interface Principal {
  key: KeyRecord;
  account: AccountRecord;
  /** Decrypted once per cache fill; never logged, never sent anywhere but upstream. */
  providerKey: string | null;
  secretExpiresAt: Date | null;
  memberActive: boolean;
  memberRole: 'admin' | 'developer' | null;
  /** The member's groups (sorted ids), as resolved with the key. */
  groupIds: readonly string[];
  /** The model policy the key is under, compiled once per cache fill; null: any model, any max_tokens. */
  policy: ModelPolicy | null;
}

interface Entry {
  principal: Principal | null;
  expiresAt: number;
  /** When the database last answered for this key: the start of the stale window. */
  confirmedAt: number;
}

/** How a key was found: in memory, in the database, from memory past its life (the database away), or not at all. */
export type LookupResult = 'hit' | 'miss' | 'stale' | 'unavailable';

/** While the database is away, a lookup is tried at most this often; meanwhile calls are answered from memory. */
const DOWN_RETRY_MS = 500;

export interface ResolverOptions {
  ttlMs: number;
  negativeTtlMs?: number;
  clock?: () => number;
  /** Keys kept in memory at most; the oldest entry goes first. */
  maxEntries?: number;
  /** Unknown app keys one client may present per minute before it gets 429 without a lookup. */
  maxUnknownPerMinute?: number;
  /** Told when a rotated-away secret is presented after its grace period (the call is refused). */
  onRetiredSecret?: (p: Principal) => void;
  /** The same for admin keys, counted apart: they manage an account, so the budget is smaller. */
  maxUnknownAdminPerMinute?: number;
  /**
   * While the database is unreachable, a key it confirmed at most this long ago is served from
   * memory past `ttlMs`; a key not held that long gets a 503 its client retries. 0: never.
   */
  staleMaxMs?: number;
  /** Sees each lookup: from memory, from the database, from memory past its life, or not answerable. */
  onLookup?(result: LookupResult): void;
  /** Told when lookups start failing because the database is unreachable, and when it answers again. */
  onDatabase?(state: 'down' | 'up', error?: unknown): void;
}

/**
 * Resolves app keys with an in-memory cache: a warm key costs a hash and a map lookup, no
 * database round trip. Entries live at most `ttlMs` (the safety net); changes made anywhere
 * evict them sooner through `invalidateKey` / `invalidateAccount`.
 */
export class KeyResolver {
  readonly #cache = new Map<string, Entry>();
  // Unknown hashes live apart, so forged keys can't push real ones out of the cache.
  readonly #misses = new Map<string, number>();
  readonly #failed: FailedAttempts;
  readonly #inflight = new Map<string, Promise<Principal | null>>();
  /** Key id → last use (epoch ms; made a Date only when written). */
  readonly #lastUsed = new Map<string, number>();
  readonly #store: Pick<Store, 'keys'>;
  readonly #box: SecretBox;
  readonly #ttl: number;
  readonly #negativeTtl: number;
  readonly #now: () => number;
  readonly #maxEntries: number;
  readonly #onRetiredSecret: ((p: Principal) => void) | undefined;
  readonly #budget: Record<KeyKind, number>;
  readonly #onLookup: (result: LookupResult) => void;
  readonly #staleMax: number;
  readonly #database: DatabaseWatch;

  constructor(store: Pick<Store, 'keys'>, box: SecretBox, opts: ResolverOptions) {
    this.#store = store;
    this.#box = box;
    this.#ttl = opts.ttlMs;
    this.#negativeTtl = opts.negativeTtlMs ?? Math.min(opts.ttlMs, 5_000);
    this.#now = opts.clock ?? Date.now;
    this.#maxEntries = opts.maxEntries ?? 100_000;
    this.#onRetiredSecret = opts.onRetiredSecret;
    const app = opts.maxUnknownPerMinute ?? 120;
    this.#budget = { live: app, test: app, admin: opts.maxUnknownAdminPerMinute ?? Math.min(app, 30) };
    this.#failed = new FailedAttempts({ clock: this.#now });
    this.#onLookup = opts.onLookup ?? (() => {});
    this.#database = new DatabaseWatch({
      clock: this.#now,
      retryMs: DOWN_RETRY_MS,
      ...(opts.onDatabase ? { onChange: opts.onDatabase } : {}),
    });
    this.#staleMax = opts.staleMaxMs ?? 15 * 60_000;
  }

  /** Keys held in memory (known and unknown), for tests and metrics. */
  get size(): number {
    return this.#cache.size + this.#misses.size;
  }

  /** Resolves a presented credential, or throws the provider-shaped error that explains what to send. */
  async resolve(token: string | undefined, allowed: readonly KeyKind[], client = ''): Promise<Principal> {
    const kind = presentedKind(token, allowed);
    // A missing token was refused above.
    const principal = await this.#lookup(hashKeyHex(token!), kind, client);
    if (!principal)
      throw new GatewayError(
        'authentication_error',
        'Invalid app key: it does not exist or was deleted. Create one with `keygate key create`.',
      );
    checkActive(principal, this.#now(), this.#onRetiredSecret);
    this.#lastUsed.set(principal.key.id, this.#now());
    return principal;
  }

  // The key is found by its SHA-256 in a map or an index, never compared with a stored secret:
  // the time a lookup takes says nothing about how close a guess was.
  async #lookup(hash: string, kind: KeyKind, client: string): Promise<Principal | null> {
    const now = this.#now();
    const hit = this.#cache.get(hash);
    if (hit && hit.expiresAt > now) return this.#fromMemory(hit.principal);
    const missUntil = this.#misses.get(hash);
    if (missUntil !== undefined && missUntil > now) return this.#fromMemory(null);
    const stale = hit && now - hit.confirmedAt <= this.#staleMax ? hit.principal : null;
    if (this.#database.down) {
      const retry = this.#database.retryDue();
      // Known away: answered from memory at once; a key held asks in the background whether it is back.
      if (stale || !retry) {
        if (retry) {
          const epoch = this.#database.epoch;
          Promise.resolve()
            .then(() => this.#fetch(hash, kind, client))
            .catch((err) => this.#database.failed(err, epoch));
        }
        return this.#served(stale);
      }
    }
    this.#onLookup('miss');
    const epoch = this.#database.epoch;
    try {
      return await this.#fetch(hash, kind, client);
    } catch (err) {
      if (!this.#database.failed(err, epoch)) throw err;
      return this.#served(stale);
    }
  }

  /** One database lookup per hash at a time. */
  #fetch(hash: string, kind: KeyKind, client: string): Promise<Principal | null> {
    let pending = this.#inflight.get(hash);
    if (pending) return pending;
    // Each unknown key costs a database lookup: a client guessing keys is cut off early.
    this.#failed.check(kind, client, this.#budget[kind], kind === 'admin' ? 'admin keys' : 'app keys');
    const epoch = this.#database.epoch;
    pending = this.#store.keys
      .resolve(Buffer.from(hash, 'hex'))
      .then((found) => {
        if (this.#database.answered(epoch)) this.recheckAll();
        const principal = found ? this.#toPrincipal(found) : null;
        // An eviction that raced this lookup wins: don't cache what it meant to drop.
        if (this.#inflight.get(hash) === pending) this.#remember(hash, principal);
        if (!principal) this.#failed.fail(kind, client);
        return principal;
      })
      .finally(() => this.#inflight.delete(hash));
    this.#inflight.set(hash, pending);
    return pending;
  }

  /**
   * The database answers again, or the LISTEN connection is back: every entry held was
   * confirmed before, and a change made meanwhile may not have reached this instance (a
   * notification sent while that connection was down is lost), so each entry is looked up
   * again at its next use. It stays the fallback should the database go away again.
   */
  recheckAll(): void {
    for (const entry of this.#cache.values()) entry.expiresAt = -Infinity;
    this.#misses.clear();
  }

  /** The answer while the database is away: the key as last confirmed, else a 503 to retry. */
  #served(stale: Principal | null): Principal {
    this.#onLookup(stale ? 'stale' : 'unavailable');
    if (stale) return stale;
    throw databaseUnreachable('This key');
  }

  #fromMemory(principal: Principal | null): Principal | null {
    this.#onLookup('hit');
    return principal;
  }

  #remember(hash: string, principal: Principal | null): void {
    const now = this.#now();
    if (principal) {
      this.#misses.delete(hash);
      this.#cache.delete(hash);
      this.#cache.set(hash, { principal, expiresAt: now + this.#ttl, confirmedAt: now });
      trim(this.#cache, this.#maxEntries);
    } else {
      this.#misses.delete(hash);
      this.#misses.set(hash, now + this.#negativeTtl);
      trim(this.#misses, Math.max(1, this.#maxEntries / 10));
    }
  }

  #toPrincipal(found: ResolvedKey): Principal {
    return {
      key: found.key,
      account: found.account,
      providerKey: found.account.providerKeySealed
        ? this.#box.open(found.account.providerKeySealed, { purpose: 'provider-key', row: found.account.id })
        : null,
      secretExpiresAt: found.secretExpiresAt,
      memberActive: found.memberStatus !== 'removed',
      memberRole: found.memberRole,
      groupIds: found.groupIds,
      policy: compilePolicy(found.policyRules),
    };
  }

  invalidateKey(keyId: string): void {
    this.#evict((p) => p?.key.id === keyId);
  }

  invalidateAccount(accountId: string): void {
    this.#evict((p) => p?.account.id === accountId);
  }

  invalidateMember(memberId: string): void {
    this.#evict((p) => p?.key.memberId === memberId);
  }

  /** Applies a `keygate_invalidate` payload (`key:<id>`, `member:<id>`, `account:<id>`); anything else clears all. */
  apply(payload: string): void {
    const i = payload.indexOf(':');
    const kind = payload.slice(0, i);
    const id = payload.slice(i + 1);
    if (i > 0 && id && kind === 'key') this.invalidateKey(id);
    else if (i > 0 && id && kind === 'member') this.invalidateMember(id);
    else if (i > 0 && id && kind === 'account') this.invalidateAccount(id);
    else this.clear();
  }

  clear(): void {
    this.#cache.clear();
    this.#misses.clear();
    this.#inflight.clear();
  }

  #evict(match: (p: Principal | null) => boolean): void {
    for (const [hash, entry] of this.#cache) if (match(entry.principal)) this.#cache.delete(hash);
    // Lookups in flight may return rows read before the change; let them finish uncached.
    this.#inflight.clear();
  }

  /** Hands over the last-use times gathered since the previous call. */
  drainLastUsed(): Map<string, Date> {
    const out = new Map<string, Date>();
    for (const [id, at] of this.#lastUsed) out.set(id, new Date(at));
    this.#lastUsed.clear();
    return out;
  }
}

/** Drops the oldest entries (Maps iterate in insertion order) until `map` holds at most `max`. */
function trim(map: Map<string, unknown>, max: number): void {
  for (const key of map.keys()) {
    if (map.size <= max) return;
    map.delete(key);
  }
}
