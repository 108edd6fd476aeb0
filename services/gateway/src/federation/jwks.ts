import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { Dispatcher } from 'undici';
import type { EgressPolicy } from '../lib/egress';
import type { FederationIssuerRecord } from './federation-record-queries';

/** Key sets and discovery documents are a few KB; a larger answer is refused unread. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
const MAX_KEYS = 100;
const FETCH_TIMEOUT_MS = 5_000;

export class JwksUnavailable extends Error {}

interface Entry {
  getKey: JWTVerifyGetKey;
  fetchedAt: number;
}

export interface JwksOptions {
  egress: EgressPolicy;
  clock: () => number;
  /** How long a fetched key set is used before it is fetched again. */
  ttlMs?: number;
  /** An unknown `kid` refetches the set at most this often per issuer (a rotation; not every forged kid). */
  refetchMs?: number;
  /** Issuers' key sets kept at most; the oldest go first. */
  maxEntries?: number;
}

/**
 * Issuers' signing keys: fetched through the egress policy (the URL is the tenant's to aim),
 * bounded in size and count, cached for `ttlMs`, fetched again early when a token names a key
 * the cached set lacks (the issuer rotated).
 */
export class IssuerKeys {
  readonly #cache = new Map<string, Entry>();
  readonly #failed = new Map<string, number>();
  readonly #egress: EgressPolicy;
  readonly #dispatcher: Dispatcher;
  readonly #now: () => number;
  readonly #ttl: number;
  readonly #refetch: number;
  readonly #max: number;

  constructor(opts: JwksOptions) {
    this.#egress = opts.egress;
    this.#dispatcher = opts.egress.dispatcher({ connectTimeoutMs: FETCH_TIMEOUT_MS });
    this.#now = opts.clock;
    this.#ttl = opts.ttlMs ?? 10 * 60_000;
    this.#refetch = opts.refetchMs ?? 30_000;
    this.#max = opts.maxEntries ?? 1_000;
  }

  /** A key getter for jose's jwtVerify that refetches once on an unknown key id. */
  async getter(issuer: FederationIssuerRecord): Promise<JWTVerifyGetKey> {
    if (issuer.jwks.type === 'inline') return createLocalJWKSet(keySet({ keys: issuer.jwks.keys }));
    const id = `${issuer.id}\0${issuer.updatedAt.getTime()}`;
    let entry = this.#cache.get(id);
    if (!entry || this.#now() - entry.fetchedAt > this.#ttl) entry = await this.#load(id, issuer);
    const first = entry;
    return async (header, token) => {
      try {
        return await first.getKey(header, token);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw err;
        if (this.#now() - first.fetchedAt < this.#refetch) throw err;
        return (await this.#load(id, issuer)).getKey(header, token);
      }
    };
  }

  async #load(id: string, issuer: FederationIssuerRecord): Promise<Entry> {
    // An issuer whose keys could not be fetched is not asked again for a while: a tenant's
    // failing URL costs one fetch per `refetchMs`, not one per assertion.
    const failedAt = this.#failed.get(id);
    if (failedAt !== undefined && this.#now() - failedAt < this.#refetch) throw new JwksUnavailable();
    let entry: Entry;
    try {
      entry = { getKey: createLocalJWKSet(keySet(await this.#fetchSet(issuer))), fetchedAt: this.#now() };
    } catch (err) {
      this.#failed.set(id, this.#now());
      if (this.#failed.size > this.#max) this.#failed.delete(this.#failed.keys().next().value!);
      throw err;
    }
    this.#failed.delete(id);
    this.#cache.delete(id);
    this.#cache.set(id, entry);
    for (const key of this.#cache.keys()) {
      if (this.#cache.size <= this.#max) break;
      this.#cache.delete(key);
    }
    return entry;
  }

  async #fetchSet(issuer: FederationIssuerRecord): Promise<unknown> {
    const jwks = issuer.jwks;
    if (jwks.type === 'explicit_url') return this.#document(jwks.url);
    if (jwks.type !== 'discovery') throw new JwksUnavailable();
    const base = (jwks.discovery_base ?? issuer.issuerUrl).replace(/\/+$/, '');
    const discovery = (await this.#document(`${base}/.well-known/openid-configuration`)) as {
      jwks_uri?: unknown;
    };
    if (typeof discovery?.jwks_uri !== 'string') throw new JwksUnavailable();
    return this.#document(discovery.jwks_uri);
  }

  /** One JSON document, through the egress policy, within the size bound; any failure is "unavailable". */
  async #document(url: string): Promise<unknown> {
    try {
      if (!/^https?:\/\//.test(url)) throw new JwksUnavailable();
      await this.#egress.check(url);
      const res = (await fetch(url, {
        dispatcher: this.#dispatcher,
        redirect: 'error',
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        headers: { accept: 'application/json' },
      } as never)) as unknown as Response;
      if (!res.ok || !res.body) throw new JwksUnavailable();
      if (Number(res.headers.get('content-length')) > MAX_DOCUMENT_BYTES) throw new JwksUnavailable();
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        if (size > MAX_DOCUMENT_BYTES) throw new JwksUnavailable();
        chunks.push(chunk);
      }
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new JwksUnavailable();
    }
  }

  close(): Promise<void> {
    return this.#dispatcher.close();
  }
}

/** A key set of at most MAX_KEYS keys, or "unavailable". */
function keySet(doc: unknown): JSONWebKeySet {
  const keys = (doc as { keys?: unknown })?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS) throw new JwksUnavailable();
  return { keys } as JSONWebKeySet;
}
