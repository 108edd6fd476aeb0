import { DeliveryWorker } from '../alerts/delivery';
import { watchErrorRates } from '../alerts/monitors';
import type { Kernel } from '../kernel/kernel';

/** The organization API's background work: webhook delivery of its alerts and the error-rate watch. */
export interface Alerts {
  delivery: DeliveryWorker;
  errorRates: ReturnType<typeof watchErrorRates>;
}

export async function installAlerts(kernel: Kernel): Promise<Alerts> {
  const { store, box, config, egress, logger, closer } = kernel;
  const delivery = new DeliveryWorker(store, box, { ...config.webhooks, egress }, logger);
  if (kernel.background) {
    await delivery.start();
    closer.add(() => delivery.stop());
  }
  const errorRates = watchErrorRates(store, config.errorRateCheckMs, logger);
  closer.add(() => errorRates.stop());
  // Another worker watches; this one still checks when asked.
  if (!kernel.background) await errorRates.stop();
  return { delivery, errorRates };
}
