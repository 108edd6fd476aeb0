import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../lib/errors';
import { SecretBox } from '../lib/secret-box';
import type { ResolvedKey } from '../tenancy/key-queries';
import { generateKey, hashKey } from './keys';
import { KeyResolver, type LookupResult, type ResolverOptions } from './resolver';

const box = new SecretBox(randomBytes(32).toString('base64url'));

function fakeStore(known: Map<string, ResolvedKey>) {
  const calls = { count: 0 };
  const db = { down: false };
  return {
    calls,
    db,
    keys: {
      async resolve(hash: Buffer) {
        calls.count++;
        if (db.down)
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        return known.get(hash.toString('hex')) ?? null;
      },
    },
  };
}

function resolvedKey(id: string, overrides: Partial<ResolvedKey['key']> = {}): ResolvedKey {
  return {
    key: {
      id,
      accountId: 'acct_1',
      memberId: null,
      kind: 'live',
      status: 'active',
      expiresAt: null,
      ...overrides,
    } as ResolvedKey['key'],
    account: {
      id: 'acct_1',
      status: 'active',
      providerKeySealed: box.seal('sk-ant-api03-provider', { purpose: 'provider-key', row: 'acct_1' }),
    } as ResolvedKey['account'],
    memberStatus: null,
    memberRole: null,
    secretExpiresAt: null,
    groupIds: [],
    policyRules: [],
  } as ResolvedKey;
}

function setup(opts: Partial<ResolverOptions> = {}) {
  const token = generateKey('live');
  const known = new Map([[hashKey(token).toString('hex'), resolvedKey('key_1')]]);
  const store = fakeStore(known);
  let now = 1_000_000;
  const lookups: LookupResult[] = [];
  const resolver = new KeyResolver(store as never, box, {
    ttlMs: 30_000,
    clock: () => now,
    onLookup: (r) => lookups.push(r),
    ...opts,
  });
  return { token, store, resolver, known, lookups, tick: (ms: number) => (now += ms) };
}

describe('KeyResolver', () => {
  it('a warm key costs no lookup; concurrent cold lookups share one', async () => {
    const { token, store, resolver } = setup();
    const [a, b] = await Promise.all([resolver.resolve(token, ['live']), resolver.resolve(token, ['live'])]);
    expect(a.key.id).toBe('key_1');
    expect(b.providerKey).toBe('sk-ant-api03-provider');
    await resolver.resolve(token, ['live']);
    expect(store.calls.count).toBe(1);
  });

  it('looks the key up again after its cache lifetime, and at once after an invalidation', async () => {
    const { token, store, resolver, tick } = setup();
    await resolver.resolve(token, ['live']);
    tick(30_001);
    await resolver.resolve(token, ['live']);
    expect(store.calls.count).toBe(2);
    resolver.invalidateKey('key_1');
    await resolver.resolve(token, ['live']);
    expect(store.calls.count).toBe(3);
  });

  it('refuses a revoked key once the change is known', async () => {
    const { token, resolver, known } = setup();
    await resolver.resolve(token, ['live']);
    known.set(hashKey(token).toString('hex'), resolvedKey('key_1', { status: 'archived' }));
    resolver.invalidateKey('key_1');
    await expect(resolver.resolve(token, ['live'])).rejects.toThrow(/archived/);
  });

  it('keeps memory bounded however many forged keys arrive', async () => {
    const { token, resolver } = setup({ maxEntries: 100, maxUnknownPerMinute: 1_000_000 });
    await resolver.resolve(token, ['live']);
    for (let i = 0; i < 2_000; i++)
      await resolver.resolve(generateKey('live'), ['live'], `client-${i}`).catch(() => {});
    expect(resolver.size).toBeLessThanOrEqual(110);
    // The real key was not pushed out by the forged ones.
    await expect(resolver.resolve(token, ['live'])).resolves.toMatchObject({ key: { id: 'key_1' } });
  });

  it('cuts off a client that keeps presenting unknown keys, without a lookup', async () => {
    const { store, resolver, token, tick } = setup({ maxUnknownPerMinute: 5 });
    await resolver.resolve(token, ['live'], '10.0.0.9');
    for (let i = 0; i < 5; i++)
      await expect(resolver.resolve(generateKey('live'), ['live'], '10.0.0.9')).rejects.toThrow(
        /does not exist/,
      );
    const before = store.calls.count;
    const err = await resolver.resolve(generateKey('live'), ['live'], '10.0.0.9').catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.status).toBe(429);
    expect(Number(err.headers['retry-after'])).toBeGreaterThan(0);
    expect(store.calls.count).toBe(before);
    // Keys in use, and other clients, are unaffected; the window resets.
    await expect(resolver.resolve(token, ['live'], '10.0.0.9')).resolves.toBeDefined();
    await expect(resolver.resolve(generateKey('live'), ['live'], '10.0.0.10')).rejects.toThrow(
      /does not exist/,
    );
    tick(60_001);
    await expect(resolver.resolve(generateKey('live'), ['live'], '10.0.0.9')).rejects.toThrow(
      /does not exist/,
    );
  });
});

describe('KeyResolver while the database is unreachable', () => {
  it('serves a key it confirmed past its cache life, asking again at most every 500 ms, until the stale bound', async () => {
    const { token, store, resolver, lookups, tick } = setup({ staleMaxMs: 60_000 });
    await resolver.resolve(token, ['live']);
    store.db.down = true;
    tick(30_001);
    await expect(resolver.resolve(token, ['live'])).resolves.toMatchObject({ key: { id: 'key_1' } });
    // Known away: from memory, without a lookup, until a retry is due.
    const tried = store.calls.count;
    await resolver.resolve(token, ['live']);
    expect(store.calls.count).toBe(tried);
    tick(500);
    await resolver.resolve(token, ['live']);
    expect(store.calls.count).toBe(tried + 1);
    expect(lookups).toEqual(['miss', 'miss', 'stale', 'stale', 'stale']);
    // Confirmed 60 s ago and more: no longer served.
    tick(29_500);
    const err = await resolver.resolve(token, ['live']).catch((e) => e);
    expect(err).toMatchObject({ type: 'api_error', status: 503 });
  });

  it('answers a key it does not hold with a 503 its client retries, not a 500', async () => {
    const { store, resolver, lookups } = setup();
    store.db.down = true;
    const err = await resolver.resolve(generateKey('live'), ['live']).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ type: 'api_error', status: 503 });
    expect(err.message).toMatch(/database is unreachable/);
    expect(err.headers).toEqual({ 'retry-after': '5', 'x-should-retry': 'true' });
    expect(lookups).toEqual(['miss', 'unavailable']);
  });

  it('serves nothing past its cache life with a stale bound of 0', async () => {
    const { token, store, resolver, tick } = setup({ staleMaxMs: 0 });
    await resolver.resolve(token, ['live']);
    store.db.down = true;
    tick(30_001);
    await expect(resolver.resolve(token, ['live'])).rejects.toMatchObject({ status: 503 });
  });

  it('once the database answers again, looks every held key up at its next use (a revocation made meanwhile is seen)', async () => {
    const { token, store, resolver, known, tick } = setup();
    const other = generateKey('live');
    known.set(hashKey(other).toString('hex'), resolvedKey('key_2'));
    await resolver.resolve(token, ['live']);
    tick(20_000);
    await resolver.resolve(other, ['live']);
    store.db.down = true;
    tick(10_001);
    await resolver.resolve(token, ['live']);
    // Revoked while this instance could not hear of it; key_2's entry has 10 s of life left.
    known.set(hashKey(other).toString('hex'), resolvedKey('key_2', { status: 'inactive' }));
    store.db.down = false;
    tick(500);
    // Served from memory; the lookup that asks whether the database is back runs beside it.
    await resolver.resolve(token, ['live']);
    await new Promise((r) => setImmediate(r));
    await expect(resolver.resolve(other, ['live'])).rejects.toThrow(/deactivated/);
  });

  it('lets any other database error through', async () => {
    const { resolver, store } = setup();
    store.keys.resolve = async () => {
      throw Object.assign(new Error('syntax error'), { code: '42601' });
    };
    await expect(resolver.resolve(generateKey('live'), ['live'])).rejects.toThrow('syntax error');
  });
});
