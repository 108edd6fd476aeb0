import { describe, expect, it } from 'vitest';
import { callAt } from '../../test/kit/call-records';
import { rollUp } from './call-queries';

const at = '2026-11-28T10:15:00Z';
const usage = { input_tokens: 10, output_tokens: 2 };

describe('rollUp', () => {
  it('sums calls of one row and keeps every difference apart, a null from an empty value too', () => {
    const rows = rollUp([
      callAt('acct_1', at, { usage, model: 'm' }),
      callAt('acct_1', '2026-11-28T10:59:59Z', { usage, model: 'm', status: 529 }),
      callAt('acct_1', at, { usage, model: '' }),
      callAt('acct_1', at, { usage, model: null }),
      callAt('acct_1', at, { usage, model: 'm', groupId: 'g' }),
      callAt('acct_1', '2026-11-28T11:00:00Z', { usage, model: 'm' }),
    ]);
    expect(rows.map((r) => [r.model, r.group_id, r.hour.toISOString(), r.requests, r.errors])).toEqual([
      ['m', null, '2026-11-28T10:00:00.000Z', 2, 1],
      ['', null, '2026-11-28T10:00:00.000Z', 1, 0],
      [null, null, '2026-11-28T10:00:00.000Z', 1, 0],
      ['m', 'g', '2026-11-28T10:00:00.000Z', 1, 0],
      ['m', null, '2026-11-28T11:00:00.000Z', 1, 0],
    ]);
    expect(rows[0]!.input_tokens).toBe(20);
  });

  it('a client-sent value holding the separators cannot merge two rows', () => {
    // Joined naively, model "a\0" + group "b" and model "a" + group "\0b"-like values could meet.
    const rows = rollUp([
      callAt('acct_1', at, { usage, model: 'a\u0000', groupId: 'b' }),
      callAt('acct_1', at, { usage, model: 'a', groupId: '\u0000b' }),
      callAt('acct_1', at, { usage, model: 'a', groupId: 'b' }),
      callAt('acct_1', at, { usage, model: 'a\u0001', groupId: null }),
      callAt('acct_1', at, { usage, model: 'a', groupId: '\u0001' }),
      callAt('acct_1', at, { usage, model: 'a\u0000', groupId: 'b' }),
    ]);
    expect(rows.map((r) => [r.model, r.group_id, r.requests])).toEqual([
      ['a\u0000', 'b', 2],
      ['a', '\u0000b', 1],
      ['a', 'b', 1],
      ['a\u0001', null, 1],
      ['a', '\u0001', 1],
    ]);
  });
});
