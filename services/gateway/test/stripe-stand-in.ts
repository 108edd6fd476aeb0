import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { randomBase62 } from '../src/lib/ids';

export const WEBHOOK_SECRET = `whsec_${randomBase62(32)}`;
export const STRIPE_KEY = `sk_test_${randomBase62(32)}`;

export interface StandInRequest {
  method: string;
  path: string;
  form: Record<string, string>;
}

/**
 * A stand-in for the few Stripe endpoints the gateway calls (customers, Checkout sessions,
 * portal sessions, subscription retrieval), on loopback, answering objects shaped like
 * Stripe's. Subscriptions live in `subscriptions`; tests change them as Stripe would.
 */
export interface StripeStandIn {
  url: string;
  /** Environment that points the gateway's Stripe library here. */
  env: Record<string, string>;
  requests: StandInRequest[];
  subscriptions: Map<string, Record<string, any>>;
  /** Completes a Checkout session as the customer paying would: a subscription exists; returns the session object. */
  completeCheckout(
    sessionId: string,
    status?: 'active' | 'trialing',
  ): { session: Record<string, any>; subscription: Record<string, any> };
  /** A signed webhook delivery: the raw body and its Stripe-Signature header. */
  event(
    type: string,
    object: Record<string, any>,
    opts?: { id?: string; created?: number },
  ): { id: string; body: string; signature: string };
  close(): Promise<void>;
}

const DAY_S = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);

export async function startStripeStandIn(): Promise<StripeStandIn> {
  const requests: StandInRequest[] = [];
  const subscriptions = new Map<string, Record<string, any>>();
  const sessions = new Map<string, Record<string, any>>();
  let base = '';

  const routes: Array<
    [string, RegExp, (form: Record<string, string>, m: RegExpMatchArray) => [number, unknown]]
  > = [
    [
      'POST',
      /^\/v1\/customers$/,
      (f) => [
        200,
        {
          id: `cus_${randomBase62(14)}`,
          object: 'customer',
          name: f.name ?? null,
          email: null,
          created: nowS(),
          livemode: false,
          metadata: pickPrefix(f, 'metadata'),
          invoice_settings: { default_payment_method: null },
        },
      ],
    ],
    [
      'POST',
      /^\/v1\/checkout\/sessions$/,
      (f) => {
        const id = `cs_test_${randomBase62(24)}`;
        const session = {
          id,
          object: 'checkout.session',
          mode: f.mode,
          status: 'open',
          payment_status: 'unpaid',
          customer: f.customer,
          client_reference_id: f.client_reference_id ?? null,
          subscription: null,
          url: `${base}/c/pay/${id}`,
          livemode: false,
          success_url: f.success_url,
          cancel_url: f.cancel_url,
          created: nowS(),
          expires_at: nowS() + DAY_S,
          metadata: {},
          line_items_requested: {
            price: f['line_items[0][price]'],
            quantity: Number(f['line_items[0][quantity]']),
          },
          subscription_data: {
            metadata: pickPrefix(f, 'subscription_data[metadata]'),
            trial_end: f['subscription_data[trial_end]'] ? Number(f['subscription_data[trial_end]']) : null,
          },
        };
        sessions.set(id, session);
        return [200, session];
      },
    ],
    [
      'POST',
      /^\/v1\/billing_portal\/sessions$/,
      (f) => [
        200,
        {
          id: `bps_${randomBase62(24)}`,
          object: 'billing_portal.session',
          customer: f.customer,
          return_url: f.return_url,
          url: `${base}/p/session/${randomBase62(16)}`,
          created: nowS(),
          livemode: false,
        },
      ],
    ],
    [
      'GET',
      /^\/v1\/subscriptions\/([^/]+)$/,
      (_f, m) => {
        const sub = subscriptions.get(m[1]!);
        return sub
          ? [200, sub]
          : [
              404,
              {
                error: {
                  type: 'invalid_request_error',
                  code: 'resource_missing',
                  message: `No such subscription: '${m[1]}'`,
                },
              },
            ];
      },
    ],
  ];

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString();
    const path = (req.url ?? '/').split('?')[0]!;
    const form = Object.fromEntries(
      new URLSearchParams(req.method === 'GET' ? ((req.url ?? '').split('?')[1] ?? '') : raw),
    );
    requests.push({ method: req.method ?? '', path, form });
    if (path.startsWith('/c/pay/')) {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>Stand-in Checkout</title><h1>Stand-in Checkout</h1>');
      return;
    }
    for (const [method, pattern, handle] of routes) {
      const m = path.match(pattern);
      if (m && method === req.method) {
        const [status, body] = handle(form, m);
        res
          .writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBase62(14)}` })
          .end(JSON.stringify(body));
        return;
      }
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        error: {
          type: 'invalid_request_error',
          message: `Unrecognized request URL (${req.method}: ${path}).`,
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;

  return {
    url: base,
    env: {
      STRIPE_SECRET_KEY: STRIPE_KEY,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_HOST: '127.0.0.1',
      STRIPE_API_PORT: String(port),
      STRIPE_API_PROTOCOL: 'http',
    },
    requests,
    subscriptions,
    completeCheckout(sessionId, status = 'active') {
      const session = sessions.get(sessionId);
      if (!session) throw new Error(`no session ${sessionId}`);
      const start = nowS();
      const trialEnd =
        status === 'trialing' ? (session.subscription_data.trial_end ?? start + 7 * DAY_S) : null;
      const periodStart = trialEnd ?? start;
      const subscription = {
        id: `sub_${randomBase62(14)}`,
        object: 'subscription',
        status,
        customer: session.customer,
        livemode: false,
        cancel_at_period_end: false,
        cancel_at: null,
        canceled_at: null,
        created: start,
        start_date: start,
        default_payment_method: `pm_${randomBase62(14)}`,
        metadata: session.subscription_data.metadata,
        trial_start: trialEnd ? start : null,
        trial_end: trialEnd,
        collection_method: 'charge_automatically',
        currency: 'eur',
        items: {
          object: 'list',
          has_more: false,
          url: '/v1/subscription_items',
          data: [
            {
              id: `si_${randomBase62(14)}`,
              object: 'subscription_item',
              quantity: session.line_items_requested.quantity,
              current_period_start: periodStart,
              current_period_end: periodStart + 30 * DAY_S,
              price: {
                id: session.line_items_requested.price,
                object: 'price',
                currency: 'eur',
                recurring: { interval: 'month', interval_count: 1 },
                unit_amount: null,
              },
            },
          ],
        },
      };
      subscriptions.set(subscription.id, subscription);
      Object.assign(session, { status: 'complete', payment_status: 'paid', subscription: subscription.id });
      return { session, subscription };
    },
    event(type, object, opts = {}) {
      const id = opts.id ?? `evt_${randomBase62(24)}`;
      const body = JSON.stringify({
        id,
        object: 'event',
        api_version: '2026-10-28.endive',
        created: opts.created ?? nowS(),
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type,
        data: { object },
      });
      return {
        id,
        body,
        signature: Stripe.webhooks.generateTestHeaderString({ payload: body, secret: WEBHOOK_SECRET }),
      };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function pickPrefix(form: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(form))
    if (k.startsWith(`${prefix}[`)) out[k.slice(prefix.length + 1, -1)] = v;
  return out;
}
