import { describe, expect, it } from 'vitest';
import { randomBase62 } from './ids';
import { createLogger, redact } from './logger';

/** Shaped like an app key (the generator's own test checks it masks real ones). */
const appKey = (kind: string) => `kg_${kind}_${randomBase62(38)}`;

describe('logger', () => {
  it.each([
    // Fake keys, assembled so secret scanners don't mistake this file for a leak.
    `sk-ant-api03-${'AbCdEf0123456789_xyz'}-more`,
    'sk-ant-ABCDEFGH12345678',
    'sk-ant-Api03-Zz9_-aaaaaaaa',
    'sk-ant-admin01-qwertyuiop',
  ])('masks provider keys of every accepted shape: %s', (key) => {
    expect(redact(`upstream said: bad key ${key}.`)).not.toContain(key.slice(8));
  });

  it('masks app keys of every kind', () => {
    for (const kind of ['live', 'test', 'admin'] as const) {
      const key = appKey(kind);
      expect(redact(`key=${key}`)).toBe(`key=kg_${kind}_[redacted]`);
    }
  });

  it('never writes a secret passed in fields or errors, and honours the level', () => {
    const lines: string[] = [];
    const log = createLogger('info', (l) => lines.push(l));
    const key = appKey('live');
    log.debug('not shown', { key });
    log.warn('failed', { error: new Error(`rejected ${key}`), provider: 'sk-ant-api03-secretsecret' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(key.slice(8));
    expect(lines[0]).not.toContain('secretsecret');
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', msg: 'failed' });
  });
});
