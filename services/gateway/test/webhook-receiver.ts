import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../../packages/sdk/src/webhooks';
import { waitFor } from './kit/wait';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  event: { id: string; type: string; created_at: string; account_id: string; data: Record<string, any> };
  /** Whether the signature checked out with the endpoint's secret (set with `useSecret`). */
  verified: boolean;
  answered: number;
  at: number;
}

/**
 * A webhook receiver on loopback: records every request, checks its signature with the SDK's
 * `verifyWebhook`, and answers 500 to the first `failFirst` requests (then 200).
 */
export async function startReceiver(opts: { failFirst?: number; alwaysFail?: boolean } = {}) {
  const received: Received[] = [];
  let secret = '';
  let failures = opts.failFirst ?? 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const verified = await verifyWebhook({
        body,
        signature: req.headers['keygate-signature'] as string | undefined,
        secret,
      });
      const answered = opts.alwaysFail || failures-- > 0 ? 500 : 200;
      received.push({
        headers: req.headers,
        body,
        event: JSON.parse(body),
        verified,
        answered,
        at: Date.now(),
      });
      res.writeHead(answered, { 'content-type': 'text/plain' }).end(answered === 200 ? 'ok' : 'try later');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    received,
    useSecret: (s: string) => void (secret = s),
    /** The events answered 200, in the order they arrived. */
    accepted: () => received.filter((r) => r.answered === 200),
    async waitFor(check: (r: Received[]) => boolean, timeoutMs = 10_000): Promise<void> {
      await waitFor(() => check(received), { timeout: timeoutMs, interval: 20 }).catch(() => {
        throw new Error(
          `receiver: condition not met; received ${JSON.stringify(received.map((r) => [r.event.type, r.event.id, r.answered]))}`,
        );
      });
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The receivers live on loopback, which the egress policy refuses unless the operator allows it. */
export const ALLOW_LOOPBACK_RECEIVERS = { KEYGATE_EGRESS_ALLOW: '127.0.0.1/32' };

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
