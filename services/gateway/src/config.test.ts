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
    expect(msg).toMatch(/KEYGATE_SECRET: must be at least 16 characters/);
  });

  it('requires a secret when an external database is used', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@h/db' })).toThrow(
      /KEYGATE_SECRET: required with DATABASE_URL/,
    );
    expect(
      loadConfig({ DATABASE_URL: 'postgres://u@h/db', KEYGATE_SECRET: 'x'.repeat(32) }).databaseUrl,
    ).toBe('postgres://u@h/db');
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
