import type { Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import { databaseUnavailable } from '../lib/database-unavailable';
import type { SecretBox } from '../lib/secret-box';
import type { UpstreamAttempt } from '../proxy/forward';
import { providerKeyAttempt, upstreamAttempt } from './request';
import type { UpstreamQueries, UpstreamRow } from './queries';

export interface DirectoryDeps {
  queries: Pick<UpstreamQueries, 'list'>;
  box: SecretBox;
  /** Where the provider key's calls go, and how (the proxy's own dispatcher). */
  providerUrl: string;
  providerDispatcher: Dispatcher;
  /** Connections to the account's own upstreams: every one passes the egress policy. */
  egressDispatcher: Dispatcher;
}

/**
 * The order of upstreams a call of each key tries, read once per resolved key: a change to an
 * account's upstreams evicts its keys (queries.ts), and the key's next resolution reads it again.
 * An account with none gets null, and its calls take the proxy's one-upstream path untouched.
 */
export class UpstreamDirectory {
  readonly #chains = new WeakMap<Principal, UpstreamAttempt | null>();
  readonly #loading = new WeakMap<Principal, Promise<UpstreamAttempt | null>>();
  /** Each account's rows as last read, for an outage (a principal read again is a new object). */
  readonly #lastRead = new Map<string, UpstreamRow[]>();
  readonly #deps: DirectoryDeps;

  constructor(deps: DirectoryDeps) {
    this.#deps = deps;
  }

  /** The first upstream to try for this key's call; null for the provider key alone. */
  chainFor(p: Principal): UpstreamAttempt | null | Promise<UpstreamAttempt | null> {
    const chain = this.#chains.get(p);
    if (chain !== undefined) return chain;
    let pending = this.#loading.get(p);
    if (!pending) {
      pending = this.#load(p).finally(() => this.#loading.delete(p));
      this.#loading.set(p, pending);
    }
    return pending;
  }

  async #load(p: Principal): Promise<UpstreamAttempt | null> {
    let rows: UpstreamRow[];
    try {
      rows = await this.#deps.queries.list(p.account.id);
      this.#lastRead.set(p.account.id, rows);
    } catch (err) {
      // The database away: a key served from memory in an outage keeps its account's upstreams as
      // last read. An account not read since this process started cannot be told apart from one
      // with none, so its call is the retryable 503 (the caller records it).
      const last = databaseUnavailable(err) ? this.#lastRead.get(p.account.id) : undefined;
      if (!last) throw err;
      rows = last;
    }
    const chain = rows.length === 0 ? null : this.#build(p, rows);
    this.#chains.set(p, chain);
    return chain;
  }

  #build(p: Principal, rows: UpstreamRow[]): UpstreamAttempt | null {
    let next: UpstreamAttempt | null = null;
    for (let i = rows.length - 1; i >= 0; i--) {
      const { credentialSealed, ...row } = rows[i]!;
      const credential = this.#deps.box.open(credentialSealed, {
        purpose: 'upstream-credential',
        row: row.id,
      });
      next = upstreamAttempt({ ...row, credential }, this.#deps.egressDispatcher, next);
    }
    // The provider key, when the account has one, stays the first upstream.
    return p.providerKey
      ? providerKeyAttempt(this.#deps.providerUrl, p.providerKey, this.#deps.providerDispatcher, next)
      : next;
  }
}
