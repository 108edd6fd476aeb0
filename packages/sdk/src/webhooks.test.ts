import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyWebhook } from './webhooks';

const secret = 'whsec_0123456789abcdefABCDEF0123456789';
const body = '{"id":"evt_1","type":"budget.threshold_crossed","data":{"threshold_percent":80}}';
const sign = (t: number, b = body, s = secret) =>
  `t=${t},v1=${createHmac('sha256', s).update(`${t}.${b}`).digest('hex')}`;
const now = 1_770_000_000_000;
const t = now / 1000;

describe('verifyWebhook', () => {
  it('accepts a fresh signature of the exact body', async () => {
    expect(await verifyWebhook({ body, signature: sign(t), secret, now })).toBe(true);
    // A rotated secret may be sent as a second v1 during a change-over.
    expect(
      await verifyWebhook({
        body,
        signature: `${sign(t, body, 'other')},v1=${sign(t).split('v1=')[1]}`,
        secret,
        now,
      }),
    ).toBe(true);
  });

  it('refuses another body, another secret, a missing header, or an old timestamp', async () => {
    expect(await verifyWebhook({ body: body.replace('80', '50'), signature: sign(t), secret, now })).toBe(
      false,
    );
    expect(await verifyWebhook({ body, signature: sign(t, body, 'whsec_wrong'), secret, now })).toBe(false);
    expect(await verifyWebhook({ body, signature: null, secret, now })).toBe(false);
    expect(await verifyWebhook({ body, signature: sign(t - 301), secret, now })).toBe(false);
    expect(await verifyWebhook({ body, signature: sign(t - 301), secret, now, toleranceSeconds: 600 })).toBe(
      true,
    );
    // The timestamp is signed: changing it breaks the signature.
    expect(
      await verifyWebhook({
        body,
        signature: sign(t - 1000).replace(`t=${t - 1000}`, `t=${t}`),
        secret,
        now,
      }),
    ).toBe(false);
  });
});
