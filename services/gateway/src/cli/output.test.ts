import { describe, expect, it } from 'vitest';
import { details, printable, table, terminalJson, terminalText } from './output';

describe('CLI output', () => {
  const hostile = 'claude\u001b]0;owned\u0007-x\r\nkey_forged  admin\u001b[2J\u009b31m\u202e';

  it('shows escape sequences, CR, LF and other control characters in table cells escaped', () => {
    const out = table([{ model: hostile, calls: 3 }]);
    expect(out.split('\n')).toHaveLength(2);
    for (const line of out.split('\n')) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(out).toContain('claude\\x1b]0;owned\\x07-x\\x0d\\x0akey_forged  admin\\x1b[2J\\x9b31m\\u202e');
  });

  it('strips them from details too, keys and values', () => {
    const out = details({ name: hostile, 'evil\nkey': 'v' });
    expect(out.split('\n')).toHaveLength(2);
    for (const line of out.split('\n')) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
  });

  it('leaves ordinary text, unicode and nulls as they were', () => {
    expect(table([{ name: 'Zoë — ünïcode', n: null }])).toBe('NAME           N\nZoë — ünïcode  -');
  });

  it('escapes controls in free text but keeps its lines and tabs', () => {
    const out = terminalText(`Unpriced: a\u001b]52;c;ZXZpbA==\u0007, b\tc\nnext\u009b2J\u202e`);
    expect(out).toBe('Unpriced: a\\x1b]52;c;ZXZpbA==\\x07, b\tc\nnext\\x9b2J\\u202e');
    expect(printable('a\tb\nc')).toBe('a\\x09b\\x0ac');
  });

  it('writes --json with every control escaped, still the same JSON value', () => {
    const value = { model: 'm\u001b[31m\u009b2J\u0085\u202e' };
    const out = terminalJson(value);
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(out)).toEqual(value);
  });
});
