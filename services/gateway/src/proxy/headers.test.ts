import { describe, expect, it } from 'vitest';
import { clientHeaders, upstreamHeaders } from './headers';

describe('hop-by-hop headers (RFC 9110 §7.6.1)', () => {
  it('drops the headers a Connection header names, in any case and spacing, both ways', () => {
    const up = upstreamHeaders(
      { connection: 'close,  X-Secret-Thing ,x-other', 'x-secret-thing': 's', 'x-other': 'o', 'x-kept': 'k' },
      'sk-provider',
      null,
    );
    expect(up['x-secret-thing']).toBeUndefined();
    expect(up['x-other']).toBeUndefined();
    expect(up['x-kept']).toBe('k');
    const down = clientHeaders(
      { connection: 'x-upstream-hop', 'x-upstream-hop': 'h', 'x-kept': 'k' },
      'req_1',
    );
    expect(down['x-upstream-hop']).toBeUndefined();
    expect(down['x-kept']).toBe('k');
  });

  it('keeps everything else with the usual Connection values', () => {
    for (const connection of ['keep-alive', 'close'])
      expect(upstreamHeaders({ connection, 'x-kept': 'k' }, 'sk', null)).toMatchObject({ 'x-kept': 'k' });
  });
});
