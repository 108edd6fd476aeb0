import type { Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import type { SecretBox } from '../lib/secret-box';
import type { UpstreamAttempt } from '../proxy/forward';
import { GoogleTokenSource, parseServiceAccount } from './google-token';
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
  readonly #deps: DirectoryDeps;
  /** Per upstream id (rows never change, only come and go): its minted tokens outlive a key's chain. */
  readonly #tokens = new Map<string, GoogleTokenSource>();

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
    const rows = await this.#deps.queries.list(p.account.id);
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
      const tokens = row.auth === 'google-service-account' ? this.#tokenSource(row.id, credential) : null;
      next = upstreamAttempt({ ...row, credential }, this.#deps.egressDispatcher, next, tokens);
    }
    // The provider key, when the account has one, stays the first upstream.
    return p.providerKey
      ? providerKeyAttempt(this.#deps.providerUrl, p.providerKey, this.#deps.providerDispatcher, next)
      : next;
  }

  #tokenSource(id: string, credential: string): GoogleTokenSource {
    let source = this.#tokens.get(id);
    if (!source) {
      source = new GoogleTokenSource(parseServiceAccount(credential), this.#deps.egressDispatcher);
      this.#tokens.set(id, source);
    }
    return source;
  }
}
