import { describe, expect, it } from 'vitest';
import { details, table } from './output';

describe('CLI output', () => {
  const hostile = 'claude\u001b]0;owned\u0007-x\r\nkey_forged  admin\u001b[2J\u009b31m\u202e';

  it('strips escape sequences, CR, LF and other control characters from table cells', () => {
    const out = table([{ model: hostile, calls: 3 }]);
    expect(out.split('\n')).toHaveLength(2);
    for (const line of out.split('\n')) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(out).toContain('claude]0;owned-xkey_forged  admin[2J31m');
  });

  it('strips them from details too, keys and values', () => {
    const out = details({ name: hostile, 'evil\nkey': 'v' });
    expect(out.split('\n')).toHaveLength(2);
    for (const line of out.split('\n')) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
  });

  it('leaves ordinary text, unicode and nulls as they were', () => {
    expect(table([{ name: 'Zoë — ünïcode', n: null }])).toBe('NAME           N\nZoë — ünïcode  -');
  });
});
