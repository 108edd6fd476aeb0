import type { Config } from '../config';
import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import { billingStore } from './install';
import { runBillingClock } from './clock';
import type { BillingDeps } from './lifecycle';
import { SubscriptionBook } from './standing';
import { connectStripe } from './stripe';

export const DEFAULT_GRACE_DAYS = 7;

/** Billing without an in-memory book or Stripe: what the CLI's in-process operator API needs. */
export function plainBilling(
  kernelRows: Parameters<typeof billingStore>[0],
  clock: () => number,
  graceDays = DEFAULT_GRACE_DAYS,
  enforced = true,
): BillingDeps {
  return { store: billingStore(kernelRows), clock, graceDays, stripe: null, book: null, enforced };
}

export interface GatewayBilling extends BillingDeps {
  book: SubscriptionBook;
  /** Starts the billing clock's timer; returns its stop function. */
  startClock(): () => void;
}

/**
 * The gateway's billing: subscriptions in memory for admission (load the book once its
 * invalidations are watched), Stripe when configured, the clock on a timer.
 */
export async function openBilling(
  config: Config,
  kernelStore: Store,
  clock: () => number,
  logger: Logger,
  url: () => string,
): Promise<GatewayBilling> {
  const stripe = config.stripe
    ? await connectStripe({ ...config.stripe, publicUrl: () => config.publicUrl ?? url() })
    : null;
  const enforced = config.billingEnforced;
  const store = billingStore(kernelStore);
  const book = new SubscriptionBook(store, {
    clock,
    graceDays: config.paymentGraceDays,
    enforced,
    checkout: !!stripe,
    logger,
  });
  const deps: GatewayBilling = {
    store,
    clock,
    graceDays: config.paymentGraceDays,
    book,
    stripe,
    enforced,
    logger,
    startClock() {
      if (!enforced) return () => {};
      let running: Promise<unknown> | null = null;
      const timer = setInterval(() => {
        running ??= runBillingClock(deps)
          .catch((error) => logger.warn('billing clock failed', { error }))
          .finally(() => (running = null));
      }, config.billingClockMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
  return deps;
}
