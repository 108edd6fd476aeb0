/** The header Keygate signs alert webhooks with: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const WEBHOOK_SIGNATURE_HEADER = 'keygate-signature';

export interface VerifyWebhookOptions {
  /** The raw request body, exactly as received (before any JSON parsing). */
  body: string;
  /** The `keygate-signature` header. */
  signature: string | null | undefined;
  /** The endpoint's secret (`whsec_…`), shown once when the endpoint was created. */
  secret: string;
  /** Oldest accepted signature, in seconds (default 300): older deliveries are refused as replays. */
  toleranceSeconds?: number;
  /** The current time in ms (default `Date.now()`). */
  now?: number;
}

/**
 * Checks that a webhook delivery comes from Keygate and was signed recently. Uses Web Crypto,
 * so it runs on Node 20+, Bun, Deno and edge runtimes. Deduplicate deliveries by the body's
 * `id` (also in `keygate-event-id`): delivery is at least once.
 *
 * @example
 * ```ts
 * const body = await request.text();
 * if (!(await verifyWebhook({ body, signature: request.headers.get('keygate-signature'), secret: process.env.KEYGATE_WEBHOOK_SECRET! }))) {
 *   return new Response('bad signature', { status: 400 });
 * }
 * const event = JSON.parse(body); // { id, type, created_at, account_id, data }
 * ```
 */
export async function verifyWebhook(opts: VerifyWebhookOptions): Promise<boolean> {
  if (!opts.signature) return false;
  let t = Number.NaN;
  const given: string[] = [];
  for (const part of opts.signature.split(',')) {
    const [k, v] = [part.slice(0, part.indexOf('=')).trim(), part.slice(part.indexOf('=') + 1).trim()];
    if (k === 't') t = Number(v);
    else if (k === 'v1') given.push(v.toLowerCase());
  }
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  if (!Number.isInteger(t) || Math.abs(now - t) > (opts.toleranceSeconds ?? 300)) return false;
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey(
    'raw',
    enc.encode(opts.secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, enc.encode(`${t}.${opts.body}`)));
  const expected = Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('');
  return given.some((g) => constantTimeEqual(g, expected));
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
