import type { Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import { databaseUnavailable } from '../lib/database-unavailable';
import type { SecretBox } from '../lib/secret-box';
import type { UpstreamAttempt } from '../proxy/forward';
import { GoogleTokenSource, parseServiceAccount } from './google-token';
import { FAMILIES, RULES, type EndpointFamily } from './kinds';
import { providerKeyAttempt, upstreamAttempt } from './request';
import { GatewayError } from '../lib/errors';
import type { UpstreamQueries, UpstreamRow } from './queries';

export interface DirectoryDeps {
  queries: Pick<UpstreamQueries, 'list' | 'get'>;
  box: SecretBox;
  /** Where the provider key's calls go, and how (the proxy's own dispatcher). */
  providerUrl: string;
  providerDispatcher: Dispatcher;
  /** Connections to the account's own upstreams: every one passes the egress policy. */
  egressDispatcher: Dispatcher;
}

type Chains = Record<EndpointFamily, UpstreamAttempt | null>;

const FAMILY_NAMES: Record<EndpointFamily, string> = {
  messages: 'the Messages API',
  files: 'the Files API',
  batches: 'Message Batches',
};

function pick(chains: Chains | null, family: EndpointFamily): UpstreamAttempt | null {
  if (chains === null) return null;
  const chain = chains[family];
  if (chain) return chain;
  const serving = Object.values(RULES)
    .filter((r) => r.serves.includes(family))
    .map((r) => r.label);
  throw new GatewayError(
    'permission_error',
    `None of this account's upstreams serves ${FAMILY_NAMES[family]}; ${serving.join(' and ')} do: an account admin adds one.`,
  );
}

/**
 * The order of upstreams a call of each key tries, read once per resolved key: a change to an
 * account's upstreams evicts its keys (queries.ts), and the key's next resolution reads it again.
 * An account with none gets null, and its calls take the proxy's one-upstream path untouched.
 */
export class UpstreamDirectory {
  readonly #chains = new WeakMap<Principal, Chains | null>();
  readonly #loading = new WeakMap<Principal, Promise<Chains | null>>();
  /** Each account's rows as last read, for an outage (a principal read again is a new object). */
  readonly #lastRead = new Map<string, UpstreamRow[]>();
  readonly #deps: DirectoryDeps;
  /** Per upstream id (rows never change, only come and go): its minted tokens outlive a key's chain. */
  readonly #tokens = new Map<string, GoogleTokenSource>();

  constructor(deps: DirectoryDeps) {
    this.#deps = deps;
  }

  /**
   * The first upstream to try for this key's call of an endpoint family; null for the provider
   * key alone (an account with no upstreams). Throws when the account has upstreams and none
   * serves the family.
   */
  chainFor(
    p: Principal,
    family: EndpointFamily = 'messages',
  ): UpstreamAttempt | null | Promise<UpstreamAttempt | null> {
    const chains = this.#chains.get(p);
    if (chains !== undefined) return pick(chains, family);
    let pending = this.#loading.get(p);
    if (!pending) {
      pending = this.#load(p).finally(() => this.#loading.delete(p));
      this.#loading.set(p, pending);
    }
    return pending.then((c) => pick(c, family));
  }

  async #load(p: Principal): Promise<Chains | null> {
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
    const chains = rows.length === 0 ? null : this.#families(p, rows);
    this.#chains.set(p, chains);
    return chains;
  }

  #families(p: Principal, rows: UpstreamRow[]): Chains {
    const chains = {} as Chains;
    for (const family of FAMILIES)
      chains[family] = this.#build(
        p,
        rows.filter((r) => RULES[r.kind].serves.includes(family)),
      );
    return chains;
  }

  /**
   * One upstream of the account alone, with no other after it: where an object made there (a
   * message batch) is read, whatever the account's order is now. Null when the account no longer
   * has it; never another upstream or the provider key in its place.
   */
  async one(accountId: string, id: string): Promise<UpstreamAttempt | null> {
    const row = await this.#deps.queries.get(accountId, id);
    return row ? this.#attempt(row, null) : null;
  }

  #build(p: Principal, rows: UpstreamRow[]): UpstreamAttempt | null {
    let next: UpstreamAttempt | null = null;
    for (let i = rows.length - 1; i >= 0; i--) next = this.#attempt(rows[i]!, next);
    // The provider key, when the account has one, stays the first upstream.
    return p.providerKey
      ? providerKeyAttempt(this.#deps.providerUrl, p.providerKey, this.#deps.providerDispatcher, next)
      : next;
  }

  #attempt({ credentialSealed, ...row }: UpstreamRow, next: UpstreamAttempt | null): UpstreamAttempt {
    const credential = this.#deps.box.open(credentialSealed, { purpose: 'upstream-credential', row: row.id });
    const tokens = row.auth === 'google-service-account' ? this.#tokenSource(row.id, credential) : null;
    return upstreamAttempt({ ...row, credential }, this.#deps.egressDispatcher, next, tokens);
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
