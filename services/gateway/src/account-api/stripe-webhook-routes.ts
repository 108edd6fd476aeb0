import { Hono } from 'hono';
import type { AppEnv } from '../app-env';
import type { BillingDeps } from '../billing/lifecycle';
import { applyStripeEvent } from '../billing/webhook';
import { GatewayError } from '../lib/errors';
import { requestBody } from '../lib/request-body';

/** `POST /billing/stripe/webhook`: Stripe's events, verified by signature over the raw body. */
export function stripeWebhookRoutes(deps: BillingDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post('/billing/stripe/webhook', async (c) => {
    const stripe = deps.stripe;
    if (!stripe)
      throw new GatewayError(
        'not_found_error',
        'Stripe is not configured on this gateway (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET).',
      );
    const event = await stripe.verify(await requestBody(c).bytes(), c.req.header('stripe-signature'));
    const outcome = await applyStripeEvent({ ...deps, stripe }, event);
    deps.logger?.info('stripe event', { id: event.id, type: event.type, outcome });
    return c.json({ received: true, outcome });
  });
  return app;
}
