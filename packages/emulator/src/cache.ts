import { createHash } from 'node:crypto';
import type { Breakpoint, CacheTtl, Measurement } from './tokens';
import type { MessagesBody } from './types';
import { forEachUnit, withoutCacheControl } from './units';

/** How a request's input tokens divide; the three figures are disjoint and sum to the total. */
export interface CacheSplit {
  input: number;
  creation5m: number;
  creation1h: number;
  read: number;
}

export type ForcedCache = 'cache_write_5m' | 'cache_write_1h' | 'cache_read';

const TTL_MS: Record<CacheTtl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };
/** Share of the input the `cache_*` scenarios put in the cache bucket. */
const FORCED_SHARE = 0.75;

/**
 * Prompt caching as the provider does it: each `cache_control` breakpoint names the prefix
 * that ends there (tools → system → messages, keyed with the model). The longest prefix still
 * alive is read; everything from there to the last breakpoint is written, each segment under
 * its own breakpoint's TTL; what follows the last breakpoint is plain input. A read refreshes
 * the entry's TTL. Unlike the provider there is no minimum cacheable length.
 */
export class PromptCache {
  readonly #expiry = new Map<string, number>();

  constructor(
    private readonly clock: () => number = Date.now,
    private readonly maxEntries = 100_000,
  ) {}

  get size(): number {
    return this.#expiry.size;
  }

  clear(): void {
    this.#expiry.clear();
  }

  split(body: MessagesBody, measurement: Measurement): CacheSplit {
    const { total, breakpoints } = measurement;
    if (breakpoints.length === 0) return { input: total, creation5m: 0, creation1h: 0, read: 0 };
    const keys = prefixKeys(body, breakpoints);
    const now = this.clock();
    let hit = -1;
    for (let i = breakpoints.length - 1; i >= 0 && hit < 0; i--) {
      const expiresAt = this.#expiry.get(keys[i]!);
      if (expiresAt === undefined) continue;
      if (expiresAt > now) hit = i;
      else this.#expiry.delete(keys[i]!);
    }
    const split: CacheSplit = { input: 0, creation5m: 0, creation1h: 0, read: 0 };
    let covered = 0;
    if (hit >= 0) {
      const bp = breakpoints[hit]!;
      split.read = covered = bp.tokens;
      this.#remember(keys[hit]!, Math.max(this.#expiry.get(keys[hit]!)!, now + TTL_MS[bp.ttl]));
    }
    for (let i = hit + 1; i < breakpoints.length; i++) {
      const bp = breakpoints[i]!;
      const segment = bp.tokens - covered;
      if (bp.ttl === '1h') split.creation1h += segment;
      else split.creation5m += segment;
      covered = bp.tokens;
      this.#remember(keys[i]!, now + TTL_MS[bp.ttl]);
    }
    split.input = total - covered;
    return split;
  }

  #remember(key: string, expiresAt: number): void {
    if (!this.#expiry.has(key) && this.#expiry.size >= this.maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.#expiry.keys().next();
      if (!oldest.done) this.#expiry.delete(oldest.value);
    }
    this.#expiry.set(key, expiresAt);
  }
}

/** The split a `cache_*` scenario forces, whatever the request's cache_control. */
export function forcedSplit(total: number, mode: ForcedCache): CacheSplit {
  const cached = Math.floor(total * FORCED_SHARE);
  return {
    input: total - cached,
    creation5m: mode === 'cache_write_5m' ? cached : 0,
    creation1h: mode === 'cache_write_1h' ? cached : 0,
    read: mode === 'cache_read' ? cached : 0,
  };
}

/** One running SHA-256 over the units; a copy is digested at each breakpoint. */
function prefixKeys(body: MessagesBody, breakpoints: Breakpoint[]): string[] {
  const hash = createHash('sha256').update(body.model).update('\0');
  const keys: string[] = [];
  const lastUnit = breakpoints[breakpoints.length - 1]!.unit;
  let next = 0;
  let index = 0;
  forEachUnit(body, (unit) => {
    const value = unit.value;
    hash.update(unit.kind).update('\0');
    hash.update(typeof value === 'string' ? value : JSON.stringify(withoutCacheControl(value))).update('\0');
    while (next < breakpoints.length && breakpoints[next]!.unit === index) {
      keys.push(hash.copy().digest('base64'));
      next++;
    }
    return index++ < lastUnit;
  });
  return keys;
}
