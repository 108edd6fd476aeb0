import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import { DEFAULT_PARTITION } from './partition-queries';

const DAY = 86_400_000;

export interface MaintenanceResult {
  /** Partitions that exist for this month and the next (created if they were missing). */
  ensured: string[];
  dropped: string[];
  /** Rows deleted past their account's plan retention, in partitions kept. */
  deleted: number;
  /** Claude Code telemetry events deleted past the same retention. */
  telemetryDeleted: number;
}

/**
 * The call log's upkeep, run at start and daily by every instance (each step is idempotent and
 * the partition DDL is serialised in the database):
 * - partitions for this month and the next exist ahead of time, and a month the default
 *   partition caught rows for gets its own partition (the rows move into it);
 * - retention: accounts of every plan share a month's partition, so a partition is dropped
 *   whole only when it ends before the longest plan retention; in newer partitions that start
 *   before the shortest retention, each account's rows past its own plan's retention are
 *   deleted. The hourly rollups are never touched: reports keep the whole history.
 */
export async function maintainCallLog(
  store: Pick<Store, 'partitions' | 'telemetry'>,
  now: Date,
): Promise<MaintenanceResult> {
  const p = store.partitions;
  const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const ensured = [await p.ensureMonth(now), await p.ensureMonth(nextMonth)];
  for (const month of await p.strayMonths()) ensured.push(await p.ensureMonth(month));

  const { minDays, maxDays } = await p.retentionBounds();
  const dropBefore = now.getTime() - maxDays * DAY;
  const trimBefore = now.getTime() - minDays * DAY;
  const dropped: string[] = [];
  let deleted = 0;
  for (const part of await p.list()) {
    if (part.to.getTime() <= dropBefore) {
      await p.drop(part.name);
      dropped.push(part.name);
    } else if (part.from.getTime() < trimBefore) {
      deleted += await p.deleteExpired(part.name, now);
    }
  }
  deleted += await p.deleteExpired(DEFAULT_PARTITION, now);
  const telemetryDeleted = await store.telemetry.deleteExpiredEvents(now);
  return { ensured: [...new Set(ensured)], dropped, deleted, telemetryDeleted };
}

/** Runs `maintainCallLog` now and then every `intervalMs` (a day); returns the stop function. */
export function scheduleCallLogMaintenance(
  store: Pick<Store, 'partitions' | 'telemetry'>,
  opts: { logger: Logger; clock: () => number; intervalMs?: number },
): () => Promise<void> {
  let running: Promise<void> | null = null;
  const run = () =>
    (running ??= maintainCallLog(store, new Date(opts.clock()))
      .then((r) => {
        if (r.dropped.length || r.deleted || r.telemetryDeleted)
          opts.logger.info('call log retention applied', {
            dropped: r.dropped,
            deleted: r.deleted,
            telemetryDeleted: r.telemetryDeleted,
          });
      })
      .catch((error) => opts.logger.warn('call log maintenance failed; retried at the next run', { error }))
      .finally(() => {
        running = null;
      }));
  void run();
  const timer = setInterval(() => void run(), opts.intervalMs ?? DAY);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
