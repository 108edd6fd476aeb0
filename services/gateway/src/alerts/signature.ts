import { createHmac } from 'node:crypto';

export const SIGNATURE_HEADER = 'keygate-signature';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as the large payment providers sign
 * webhooks: the timestamp is signed with the body, so a captured delivery cannot be replayed
 * later with a fresh timestamp. Receivers check it with `verifyWebhook` from `@keygate/sdk`.
 */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${hmac(secret, `${unixSeconds}.${body}`)}`;
}

const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex');
