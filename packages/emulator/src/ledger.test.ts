import { describe, expect, it } from 'vitest';
import { Ledger } from './ledger';

const open = (ledger: Ledger, id: string) => ledger.open(id, 'messages', {}, null, 0);

describe('ledger', () => {
  it('finds entries by request id and message id, newest first', () => {
    const ledger = new Ledger();
    const a = open(ledger, 'req_a');
    a.messageId = 'msg_1';
    const b = open(ledger, 'req_b');
    b.messageId = 'msg_1';
    expect(ledger.byRequestId('req_a')).toBe(a);
    expect(ledger.find('msg_1')).toBe(b);
    expect(ledger.last()).toBe(b);
    ledger.clear();
    expect(ledger.last()).toBeUndefined();
  });

  it('waitFor resolves on finalisation only, once, and times out otherwise', async () => {
    const ledger = new Ledger();
    const entry = open(ledger, 'req_a');
    const waiting = ledger.waitFor((e) => e.requestId === 'req_a', 1_000);
    ledger.close(entry, true, 5);
    ledger.close(entry, false, 9); // ignored: already final
    await expect(waiting).resolves.toMatchObject({ complete: true, endedAt: 5 });
    await expect(ledger.waitFor((e) => e.requestId === 'req_a', 10)).resolves.toBe(entry);
    await expect(ledger.waitFor((e) => e.requestId === 'nope', 10)).rejects.toThrow(/within 10 ms/);
  });

  it('keeps at most about `limit` entries, dropping the oldest', () => {
    const ledger = new Ledger(100);
    for (let i = 0; i < 1_000; i++) open(ledger, `req_${i}`);
    expect(ledger.entries.length).toBeLessThanOrEqual(125);
    expect(ledger.last()!.requestId).toBe('req_999');
    expect(ledger.byRequestId('req_0')).toBeUndefined();
  });
});
