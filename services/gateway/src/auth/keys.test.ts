import { describe, expect, it } from 'vitest';
import { redact } from '../lib/logger';
import { generateKey, hashKey, keyHint, parseKey } from './keys';

describe('app keys', () => {
  it('generates keys of each kind that parse back with a valid checksum', () => {
    for (const kind of ['live', 'test', 'admin'] as const) {
      const key = generateKey(kind);
      expect(key.startsWith(`kg_${kind}_`)).toBe(true);
      expect(parseKey(key)).toBe(kind);
    }
  });

  it('rejects a key whose random part or checksum was altered', () => {
    const key = generateKey('live');
    const last = key.at(-1) === 'a' ? 'b' : 'a';
    expect(parseKey(key.slice(0, -1) + last)).toBeNull();
    const flipped = key.slice(0, 10) + (key[10] === 'x' ? 'y' : 'x') + key.slice(11);
    expect(parseKey(flipped)).toBeNull();
    expect(parseKey('kg_live_short')).toBeNull();
    expect(parseKey('sk-ant-api03-abc')).toBeNull();
  });

  it('never repeats and hashes to 32 bytes', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateKey('live')));
    expect(keys.size).toBe(1000);
    expect(hashKey('kg_live_x').length).toBe(32);
  });

  it('shows only the prefix and the last four characters', () => {
    const key = generateKey('test');
    expect(keyHint(key)).toBe(`kg_test_…${key.slice(-4)}`);
  });

  it('are masked by the logger, whatever their kind', () => {
    for (const kind of ['live', 'test', 'admin'] as const) {
      expect(redact(`key=${generateKey(kind)}`)).toBe(`key=kg_${kind}_[redacted]`);
    }
  });
});
