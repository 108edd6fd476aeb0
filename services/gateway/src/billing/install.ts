import type { Kernel } from '../kernel/kernel';
import type { Store } from '../store';
import { catalogQueries, type CatalogQueries } from './catalog-queries';
import { invoiceQueries, type InvoiceQueries } from './invoice-queries';
import { startDailyReconciliation, type DailyReconciliation } from './reconcile';
import { reconciliationQueries, type ReconciliationQueries } from './reconciliation-queries';
import type { GatewayBilling } from './setup';
import { subscriptionQueries, type SubscriptionQueries } from './subscription-queries';

/** The kernel's rows billing reads: accounts and seats, and the usage a reconciliation compares. */
type KernelRows = Pick<Store, 'db' | 'accounts' | 'members' | 'usage'>;

/** Billing's queries: plans, subscriptions, invoices and reconciliations, and the kernel's rows it reads. */
export type BillingStore = KernelRows & {
  catalog: CatalogQueries;
  subscriptions: SubscriptionQueries;
  invoices: InvoiceQueries;
  reconciliations: ReconciliationQueries;
};

/** Billing's queries on the kernel's database (billing opens before the kernel: admission asks its standing). */
export function billingStore({ db, accounts, members, usage }: KernelRows): BillingStore {
  return {
    db,
    accounts,
    members,
    usage,
    catalog: catalogQueries(db.sql),
    subscriptions: subscriptionQueries(db.sql),
    invoices: invoiceQueries(db.sql),
    reconciliations: reconciliationQueries(db.sql),
  };
}

/** Starts billing's clock (in the background instance) and the daily reconciliation with the provider's reports. */
export function installBilling(kernel: Kernel, billing: GatewayBilling): DailyReconciliation {
  const { box, config, clock, logger, closer } = kernel;
  if (kernel.background) closer.add(billing.startClock());
  const reconciliation = startDailyReconciliation(
    { store: billing.store, box, prices: kernel.prices, upstreamUrl: config.upstreamUrl },
    clock,
    (error, accountId) => logger.warn('reconciliation failed', { error, accountId }),
  );
  closer.add(() => reconciliation.stop());
  return reconciliation;
}
