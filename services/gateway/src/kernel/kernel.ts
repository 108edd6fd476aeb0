import { onBudgetCrossing, onRetiredSecret } from '../alerts/monitors';
import type { AccountStore } from '../accounts/service';
import { createLimits, type Limits, type Standing } from '../admission';
import { KeyResolver, type LookupResult } from '../auth/resolver';
import { openCallLog, type CallLog } from '../call-log/open';
import { scheduleCallLogMaintenance } from '../call-log/retention';
import type { Config } from '../config';
import { fanOut, type CallSink } from '../fan-out';
import { EgressPolicy } from '../lib/egress';
import type { Logger } from '../lib/logger';
import type { SecretBox } from '../lib/secret-box';
import { AccessLog } from '../metrics/access-log';
import { metricsFor, type GatewayMetrics } from '../metrics/metrics';
import { PriceBook, readPriceFile } from '../pricing/catalog/price-book';
import { watchInvalidations, type Database, type Store } from '../store';
import { onCommitted } from '../store/database';
import type { Closer } from './closer';

/** Billing's standing as the kernel holds it: admission asks it, invalidations refresh it. */
export interface StandingBook extends Standing {
  apply(payload: string): void;
  load(): Promise<void>;
}

/** What the kernel's own parts tell the metrics; a no-op where metrics are off. */
export interface KernelMeter {
  keyLookup(result: LookupResult): void;
  invalidationApplied(): void;
}

const NO_METER: KernelMeter = { keyLookup() {}, invalidationApplied() {} };

/** The queries of the kernel's own services: key lookup, the call log, limits and budgets, prices, health. */
export type KernelStore = Pick<
  Store,
  | 'db'
  | 'health'
  | 'accounts'
  | 'keys'
  | 'calls'
  | 'partitions'
  | 'telemetry'
  | 'budgets'
  | 'spend'
  | 'spendLimits'
  | 'rateLimits'
  | 'alerts'
  | 'prices'
>;

/**
 * The shared services every capability stands on, built once per gateway. No field is
 * optional: where a feature is off, a no-op stands in (the meter without metrics, a call log
 * nothing is enqueued to when KEYGATE_CALL_LOG is off).
 */
export interface Kernel {
  config: Config;
  /** The kernel's own services' queries and the database's health probe. */
  store: KernelStore;
  /** The database: each capability's install builds its own queries on it. */
  db: Database;
  /**
   * The rows capabilities share, each owned by a kernel room (tenancy's accounts, members, keys
   * and audit; groups and invites; budgets, limits and alerts; the call log's figures).
   */
  tenancy: AccountStore;
  /** Seals provider keys and upstream credentials at rest. */
  box: SecretBox;
  clock: () => number;
  logger: Logger;
  /** Where tenant-chosen outward addresses may point. */
  egress: EgressPolicy;
  /** Finds the key of a call, cached, and served from memory while the database is away. */
  keys: KeyResolver;
  /** Who may call: billing standing, rate limits, budgets and spend caps. */
  limits: Limits;
  /** Where every finished call goes: access line, call log, limits and budgets, metrics. */
  record: CallSink;
  /** The call log's writer (records reach it through `record`). */
  callLog: CallLog;
  /** Access lines; each holds its call's record until the request ends. */
  access: AccessLog;
  meter: KernelMeter;
  /** This gateway's prices (bundled, price file, operator rows): every cost is derived from them. */
  prices: PriceBook;
  /** Billing's standing, as admission checks it. */
  standing: StandingBook;
  /** Writes pending last-use times now (they are otherwise written every 10 s). */
  flushLastUsed(): Promise<void>;
  /** Keygate's address as clients reach it (KEYGATE_PUBLIC_URL, else where it listens). */
  publicUrl(): string;
  /** Runs the background jobs (retention, delivery, watches, billing clock) in this instance. */
  background: boolean;
  /** Registers what to close when the gateway stops (closed last-registered first). */
  closer: Closer;
}

export interface KernelParts {
  config: Config;
  /** The database and the secret box, opened (runtime.ts). */
  runtime: { store: Store; box: SecretBox };
  clock: () => number;
  logger: Logger;
  background: boolean;
  closer: Closer;
  /** Where the gateway listens, once it does. */
  address: () => string;
  /** Opens billing's standing on the database (billing/ builds it; the kernel only holds it). */
  standing(store: Store): Promise<StandingBook>;
}

/** Builds the kernel, and the metrics registry (null when metrics are off) for the routes that serve it. */
export async function openKernel(
  parts: KernelParts,
): Promise<{ kernel: Kernel; registry: GatewayMetrics | null }> {
  const { config, clock, logger, background, closer } = parts;
  const { store, box } = parts.runtime;
  // Call records reach the spool before PostgreSQL; what an earlier run left there is replayed.
  const spooled = config.callLog && config.spoolMaxBytes > 0;
  const callLog = await openCallLog(config, store, spooled, logger);
  closer.add(() => callLog.close());
  // Partitions ahead of time and retention per plan: at start, then daily.
  if (background) closer.add(scheduleCallLogMaintenance(store, { logger, clock }));
  const standing = await parts.standing(store);
  // This gateway's prices: every cost it derives (admission, budgets, metrics, reports) reads them.
  const prices = new PriceBook(store, readPriceFile(config.priceFile));

  const limits = await createLimits({
    standing,
    prices,
    holdMs: config.upstreamTimeoutMs + 60_000,
    redisUrl: config.redisUrl,
    onRedisDown: config.limitsOnRedisDown,
    store,
    clock,
    logger,
    budgetTtlMs: config.keyCacheTtlMs,
    onCrossing: onBudgetCrossing(store, logger),
  });
  closer.add(() => limits.close());
  const registry = metricsFor(
    config,
    {
      ...(config.callLog ? { callLog: { status: () => callLog.status(), spooled } } : {}),
      limits: () => limits.status(),
      keyCacheEntries: (): number => keys.size,
    },
    prices,
    clock,
  );
  const meter: KernelMeter = registry ?? NO_METER;
  const keys = new KeyResolver(store, box, {
    ttlMs: config.keyCacheTtlMs,
    staleMaxMs: config.keyStaleMaxMs,
    clock,
    onRetiredSecret: onRetiredSecret(store, clock, logger),
    ...(registry ? { onLookup: (result: LookupResult) => registry.keyLookup(result) } : {}),
    onDatabase: (state, error) => {
      if (state === 'down')
        logger.warn('database unreachable: known keys are served from memory, unknown ones get 503', {
          error,
        });
      else logger.info('database reachable again: keys are checked again at their next use');
    },
  });
  const access = new AccessLog();
  const record = fanOut({
    access,
    callLog: config.callLog ? callLog : null,
    admission: limits.admission,
    metrics: registry,
  });

  // LISTEN/NOTIFY delivers key changes at once; the poll of the invalidations table is the
  // safety net for notifications lost while the LISTEN connection was down.
  const applyInvalidation = (payload: string) => {
    if (payload.startsWith('budgets:')) limits.budgets.apply(payload);
    else if (payload.startsWith('prices:'))
      prices.reload().catch((error) => logger.warn('price catalog reload failed', { error }));
    else {
      keys.apply(payload);
      standing.apply(payload);
    }
  };
  // This process's own changes apply on commit, before its API answers (NOTIFY comes a moment later).
  const stopLocal = onCommitted(store.db.sql, applyInvalidation);
  closer.add(async () => stopLocal());
  const stopWatching = await watchInvalidations(
    store.db,
    (payload) => {
      applyInvalidation(payload);
      meter.invalidationApplied();
    },
    {
      listen: true,
      pollMs: config.invalidationPollMs,
      onReconnect: () => {
        logger.info('LISTEN connection back: keys held are checked again at their next use');
        keys.recheckAll();
        standing.apply('reconnect');
      },
      onError: (error, where) =>
        logger.warn(
          where === 'listen' ? 'LISTEN unavailable; polling for key changes' : 'key change poll failed',
          { error },
        ),
    },
  );
  closer.add(stopWatching);
  await standing.load();
  await prices.reload();

  const flushLastUsed = () => store.keys.touch(keys.drainLastUsed());
  const touchTimer = setInterval(() => {
    flushLastUsed().catch((error) => logger.warn('last_used_at update failed', { error }));
  }, 10_000);
  touchTimer.unref();
  closer.add(() => {
    clearInterval(touchTimer);
    return flushLastUsed();
  });

  const kernel: Kernel = {
    config,
    store,
    db: store.db,
    tenancy: {
      db: store.db,
      accounts: store.accounts,
      members: store.members,
      keys: store.keys,
      audit: store.audit,
      invites: store.invites,
      rbacGroups: store.rbacGroups,
      budgets: store.budgets,
      spendLimits: store.spendLimits,
      rateLimits: store.rateLimits,
      alerts: store.alerts,
      calls: store.calls,
      usage: store.usage,
      claudeCode: store.claudeCode,
      agentTree: store.agentTree,
      telemetry: store.telemetry,
    },
    box,
    clock,
    logger,
    egress: new EgressPolicy(config.egressAllow),
    keys,
    limits,
    record,
    callLog,
    access,
    meter,
    prices,
    standing,
    flushLastUsed,
    publicUrl: () => config.publicUrl ?? parts.address(),
    background,
    closer,
  };
  return { kernel, registry };
}
