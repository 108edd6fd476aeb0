import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('applies defaults for an empty environment (embedded database)', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.databaseUrl).toBeNull();
    expect(c.dataDir).toBe(join(fileURLToPath(new URL('../../..', import.meta.url)), '.keygate'));
    expect(c.upstreamUrl).toBe('https://api.anthropic.com');
    expect(c.maxPdfPages).toBe(100);
  });

  it('names every bad value with what it should be', () => {
    let err: unknown;
    try {
      loadConfig({ PORT: 'eighty', KEYGATE_UPSTREAM_URL: 'ftp://x', KEYGATE_SECRET: 'short' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toMatch(/PORT/);
    expect(msg).toMatch(/KEYGATE_UPSTREAM_URL: must be an http\(s\) URL/);
    expect(msg).toMatch(
      /KEYGATE_SECRET: too weak \(5 characters, about \d+ bits; at least 32 random characters/,
    );
  });

  it('requires a secret when an external database is used', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@h/db' })).toThrow(
      /KEYGATE_SECRET: required with DATABASE_URL/,
    );
    expect(
      loadConfig({ DATABASE_URL: 'postgres://u@h/db', KEYGATE_SECRET: randomBytes(32).toString('base64') })
        .databaseUrl,
    ).toBe('postgres://u@h/db');
  });

  it("takes libpq's user with no host, as psql does, and still refuses what is no postgres URL", () => {
    const secret = randomBytes(32).toString('base64');
    const url = (DATABASE_URL: string) => loadConfig({ DATABASE_URL, KEYGATE_SECRET: secret }).databaseUrl;
    expect(url('postgres://me@/keygate?host=/var/run/postgresql')).toBe(
      'postgres://me@localhost/keygate?host=/var/run/postgresql',
    );
    expect(url('postgresql://me:pw@/keygate')).toBe('postgresql://me:pw@localhost/keygate');
    // The forms WHATWG URLs take already are left as they are.
    expect(url('postgresql:///keygate?host=/tmp')).toBe('postgresql:///keygate?host=/tmp');
    expect(url('postgres://me@db.internal/keygate')).toBe('postgres://me@db.internal/keygate');
    expect(() => url('mysql://me@/keygate')).toThrow(/DATABASE_URL/);
  });

  it('refuses a weak secret at start, in one line', () => {
    for (const weak of [
      'x'.repeat(32),
      'change-me-change-me-change-me-123',
      'test-secret-0123456789abcdef',
    ]) {
      const err = (() => {
        try {
          loadConfig({ DATABASE_URL: 'postgres://u@h/db', KEYGATE_SECRET: weak });
        } catch (e) {
          return e as Error;
        }
      })();
      const lines = err!.message.split('\n').filter((l) => l.includes('KEYGATE_SECRET'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/KEYGATE_SECRET: too weak .*openssl rand -base64 32/);
      expect(err!.message).not.toContain(weak);
    }
  });

  it('strips a trailing slash from the upstream URL', () => {
    expect(loadConfig({ KEYGATE_UPSTREAM_URL: 'http://127.0.0.1:4010/' }).upstreamUrl).toBe(
      'http://127.0.0.1:4010',
    );
  });

  it('turns billing off only without Stripe', () => {
    expect(loadConfig({}).billingEnforced).toBe(true);
    expect(loadConfig({ KEYGATE_BILLING: 'off' }).billingEnforced).toBe(false);
    expect(() => loadConfig({ KEYGATE_BILLING: 'maybe' })).toThrow(/KEYGATE_BILLING/);
    expect(() =>
      loadConfig({
        KEYGATE_BILLING: 'off',
        STRIPE_SECRET_KEY: 'sk_test_abc',
        STRIPE_WEBHOOK_SECRET: 'whsec_x',
      }),
    ).toThrow(/KEYGATE_BILLING: `off` treats every account as paid/);
  });
});
