import type { Principal } from '../auth/resolver';
import type { Crossing } from '../budgets/guard';
import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import {
  budgetCrossed,
  errorRateExceeded,
  isSpendLimit,
  retiredSecretUsed,
  spendLimitCrossed,
} from './events';

const MINUTE = 60_000;

/**
 * Queues a budget's or a spend limit's threshold alert; the store makes it once per budget (or
 * limit and member), period and threshold.
 */
export function onBudgetCrossing(
  store: Pick<Store, 'budgets' | 'alerts'>,
  logger: Logger,
): (c: Crossing) => void {
  return (c) => {
    const recorded = isSpendLimit(c.budget.id)
      ? store.alerts.emit(spendLimitCrossed(c))
      : store.budgets.recordCrossing(c.budget.id, new Date(c.period.start), c.threshold, budgetCrossed(c));
    recorded.catch((error) =>
      logger.warn('budget threshold alert not recorded', {
        budgetId: c.budget.id,
        threshold: c.threshold,
        error,
      }),
    );
  };
}

/** Queues an alert when a retired secret (rotated, grace over) is presented; at most one write a minute per key. */
export function onRetiredSecret(
  store: Pick<Store, 'alerts'>,
  clock: () => number,
  logger: Logger,
): (p: Principal) => void {
  const last = new Map<string, number>();
  return (p) => {
    const now = clock();
    if ((last.get(p.key.id) ?? -Infinity) > now - MINUTE) return;
    if (last.size >= 10_000) last.clear();
    last.set(p.key.id, now);
    store.alerts
      .emit(retiredSecretUsed(p, now))
      .catch((error) => logger.warn('retired secret alert not recorded', { keyId: p.key.id, error }));
  };
}

/**
 * Checks, every `intervalMs`, the error rate of each account with an endpoint that watches it
 * (errors / calls over the endpoint's window, from the call log by index). An endpoint hears
 * once when the rate reaches its threshold, and again only after it fell back below.
 */
export function watchErrorRates(
  store: Pick<Store, 'alerts'>,
  intervalMs: number,
  logger: Logger,
): { check(): Promise<void>; stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const check = () =>
    (running ??= (async () => {
      try {
        for (const w of await store.alerts.errorRateWatches()) {
          const { calls, errors } = await store.alerts.recentErrors(w.accountId, w.windowSeconds);
          const over = calls >= w.minCalls && errors / calls >= w.threshold;
          if (over !== w.alerting)
            await store.alerts.setErrorAlerting(
              w.id,
              over,
              over ? errorRateExceeded(w, calls, errors) : null,
            );
        }
      } catch (error) {
        logger.warn('error rate check failed', { error });
      } finally {
        running = null;
      }
    })());
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return {
    check,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
