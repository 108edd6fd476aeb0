import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { nulPath, parseOr400 } from './validation';

describe('NUL characters in validated input', () => {
  it('names the path of the first string or key holding one', () => {
    expect(nulPath({ a: 'ok', b: [1, 'x\u0000'] })).toBe('b[1]');
    expect(nulPath({ 'k\u0000': 1 })).toBe('k\u0000');
    expect(nulPath('\u0000')).toBe('');
    expect(nulPath({ a: ['fine', { b: 'also' }] })).toBeNull();
  });

  it('refuses them with a 400 by default, and lets a forwarded body through when asked', () => {
    const schema = z.object({ name: z.string() });
    expect(() => parseOr400(schema, { name: 'a\u0000b' })).toThrow(
      'name: must not contain NUL (\\u0000) characters.',
    );
    expect(parseOr400(z.object({ text: z.string() }), { text: 'a\u0000b' }, { nul: 'allow' })).toEqual({
      text: 'a\u0000b',
    });
  });
});
