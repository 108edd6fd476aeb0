import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sealV1 } from '../../test/kit/legacy-seal';
import { SecretBox, secretWeakness } from './secret-box';

const SECRET = randomBytes(32).toString('base64url');

describe('KEYGATE_SECRET strength', () => {
  it.each([
    'short',
    'test-secret-0123456789abcdef',
    'x'.repeat(64),
    'abcd'.repeat(16),
    'password-password-password-password',
  ])('refuses %j', (secret) => {
    expect(secretWeakness(secret)).toMatch(/^too weak \(\d+ characters, about \d+ bits/);
    expect(() => new SecretBox(secret)).toThrow(/KEYGATE_SECRET is too weak/);
  });

  it.each([
    randomBytes(32).toString('base64url'),
    randomBytes(32).toString('hex'),
    randomBytes(32).toString('base64'),
  ])('accepts random values (%s)', (secret) => {
    expect(secretWeakness(secret)).toBeNull();
  });
});

describe('SecretBox', () => {
  const box = new SecretBox(SECRET);
  const provider = { purpose: 'provider-key' as const, row: 'acct_1' };

  it('seals as v2 and opens what it sealed', () => {
    const sealed = box.seal('sk-ant-api03-secret', provider);
    expect(sealed).toMatch(/^v2\./);
    expect(sealed).not.toContain('sk-ant');
    expect(box.open(sealed, provider)).toBe('sk-ant-api03-secret');
    expect(SecretBox.isLegacy(sealed)).toBe(false);
  });

  it('binds a value to its row and its purpose: moved elsewhere, it does not open', () => {
    const sealed = box.seal('whsec_abc', { purpose: 'webhook-secret', row: 'whk_1' });
    expect(() => box.open(sealed, { purpose: 'webhook-secret', row: 'whk_2' })).toThrow();
    expect(() => box.open(sealed, { purpose: 'provider-key', row: 'whk_1' })).toThrow();
    expect(() => new SecretBox(randomBytes(32).toString('base64url')).open(sealed, provider)).toThrow();
  });

  it('still opens values sealed by earlier versions (v1), and says they need resealing', () => {
    const old = sealV1(SECRET, 'sk-ant-api03-old');
    expect(SecretBox.isLegacy(old)).toBe(true);
    expect(box.open(old, provider)).toBe('sk-ant-api03-old');
  });
});
