import type { AccountStore } from '../accounts/service';
import { DeliveryWorker } from '../alerts/delivery';
import { watchErrorRates } from '../alerts/monitors';
import type { Kernel } from '../kernel/kernel';

/** The organization API (account API and operator API): its queries and its background work. */
export interface Organization {
  /** The kernel's shared rows: the organization API owns no table of its own. */
  store: AccountStore;
  alerts: Alerts;
}

/** The organization API's background work: webhook delivery of its alerts and the error-rate watch. */
export interface Alerts {
  delivery: DeliveryWorker;
  errorRates: ReturnType<typeof watchErrorRates>;
}

export async function installOrganization(kernel: Kernel): Promise<Organization> {
  const { box, config, egress, logger, closer } = kernel;
  const store = kernel.tenancy;
  const delivery = new DeliveryWorker(store, box, { ...config.webhooks, egress }, logger);
  if (kernel.background) {
    await delivery.start();
    closer.add(() => delivery.stop());
  }
  const errorRates = watchErrorRates(store, config.errorRateCheckMs, logger);
  closer.add(() => errorRates.stop());
  // Another worker watches; this one still checks when asked.
  if (!kernel.background) await errorRates.stop();
  return { store, alerts: { delivery, errorRates } };
}
