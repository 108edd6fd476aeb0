import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../lib/errors';
import { SecretBox } from '../lib/secret-box';
import type { ResolvedKey } from '../store';
import { generateKey, hashKey } from './keys';
import { KeyResolver } from './resolver';

const box = new SecretBox(randomBytes(32).toString('base64url'));

function fakeStore(known: Map<string, ResolvedKey>) {
  const calls = { count: 0 };
  return {
    calls,
    keys: {
      async resolve(hash: Buffer) {
        calls.count++;
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

function setup(opts: { maxEntries?: number; maxUnknownPerMinute?: number } = {}) {
  const token = generateKey('live');
  const known = new Map([[hashKey(token).toString('hex'), resolvedKey('key_1')]]);
  const store = fakeStore(known);
  let now = 1_000_000;
  const resolver = new KeyResolver(store as never, box, { ttlMs: 30_000, clock: () => now, ...opts });
  return { token, store, resolver, known, tick: (ms: number) => (now += ms) };
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
