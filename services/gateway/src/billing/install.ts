import type { Kernel } from '../kernel/kernel';
import { startDailyReconciliation, type DailyReconciliation } from './reconcile';
import type { GatewayBilling } from './setup';

/** Starts billing's clock (in the background instance) and the daily reconciliation with the provider's reports. */
export function installBilling(kernel: Kernel, billing: GatewayBilling): DailyReconciliation {
  const { store, box, config, clock, logger, closer } = kernel;
  if (kernel.background) closer.add(billing.startClock());
  const reconciliation = startDailyReconciliation(
    { store, box, prices: kernel.prices, upstreamUrl: config.upstreamUrl },
    clock,
    (error, accountId) => logger.warn('reconciliation failed', { error, accountId }),
  );
  closer.add(() => reconciliation.stop());
  return reconciliation;
}
