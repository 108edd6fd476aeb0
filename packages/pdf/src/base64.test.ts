import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base64Length, decodeBase64Strict } from './base64';

describe('decodeBase64Strict', () => {
  it('decodes valid base64 of every padding length', () => {
    for (let length = 0; length <= 12; length++) {
      const bytes = randomBytes(length);
      const encoded = bytes.toString('base64');
      expect(decodeBase64Strict(encoded)).toEqual(bytes);
      expect(encoded.length).toBe(base64Length(length));
    }
  });

  it('decodes the whole alphabet', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    expect(decodeBase64Strict(alphabet)?.toString('base64')).toBe(alphabet);
    expect(decodeBase64Strict('QQ==')).toEqual(Buffer.from('A'));
    expect(decodeBase64Strict('QUI=')).toEqual(Buffer.from('AB'));
    expect(decodeBase64Strict('QR==')).toEqual(Buffer.from('A'));
  });

  it.each([
    ['missing padding', 'QQ'],
    ['length not a multiple of 4', 'QUJDRA='],
    ['a space', 'QUJD QUJD'],
    ['a trailing newline', 'QUJD\n'],
    ['a line break inside', 'QUJD\r\nQUJD'],
    ['a tab', 'QU\tJDQUJ'],
    ['URL-safe minus', 'QU-D'],
    ['URL-safe underscore', 'QU_D'],
    ['padding in the middle', 'QQ==QUJD'],
    ['a character after padding', 'QQ=A'],
    ['three padding characters', 'Q==='],
    ['only padding', '===='],
    ['a character above 0xFF whose low byte is valid', 'QUJ\u0141'],
    ['a Latin-1 character', 'QUJ\u00e9'],
    ['a NUL', 'QUJ\0'],
    ['a data URL prefix', 'data:application/pdf;base64,QUJD'],
  ])('rejects %s', (_, input) => {
    expect(decodeBase64Strict(input)).toBeNull();
  });
});
