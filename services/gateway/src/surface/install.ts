import { startEmulator, type Emulator } from '@keygate/emulator';
import { Agent } from 'undici';
import type { Kernel } from '../kernel/kernel';
import { randomBase62 } from '../lib/ids';
import { InFlightCalls } from '../proxy/in-flight';
import { SseKeepAlive } from '../proxy/keep-alive';
import { providerKeyCheck } from '../proxy/provider-key-check';
import type { ProxyOptions } from '../proxy/routes';
import { openStreamEvents } from '../streams/open';
import { accountUpstreams } from '../upstreams/wiring';
import { BatchFollower } from './batch-follower';
import { objectQueries } from './object-queries';
import type { Objects } from './ownership';

/** Messages and the provider's other endpoints, as the app mounts them. */
export interface Messages {
  proxy: ProxyOptions;
  /** Who made each provider object through Keygate, and the open batches (surface's own queries). */
  objects: Objects;
  /** Open message batches, followed to their end; each result becomes a call at the batch price. */
  follower: BatchFollower;
  /** The built-in emulator that answers kg_test_ keys. */
  emulator: Emulator;
  /** Calls being answered, ended by a shutdown that runs out of grace. */
  inFlight: InFlightCalls;
  /** Forwards any other `/v1/…` path to the provider (KEYGATE_OPEN_PASSTHROUGH). */
  openPassthrough: boolean;
  /** Largest file upload through `/v1/files` (KEYGATE_MAX_FILE_BYTES). */
  maxFileBytes: number;
  /** How long the model list is served from cache (KEYGATE_MODELS_CACHE_MS). */
  modelsCacheMs: number;
}

/** Starts what the provider surface needs: the emulator, the upstream connections, the batch follower, stream events. */
export async function installMessages(kernel: Kernel): Promise<Messages> {
  const { config, db, tenancy, box, clock, logger, closer, limits } = kernel;
  const emulatorKey = `sk-ant-emulator-${randomBase62(24)}`;
  const emulator = await startEmulator({ port: 0, apiKey: emulatorKey });
  closer.add(() => emulator.close());
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });
  closer.add(() => dispatcher.close());
  const upstreams = { live: config.upstreamUrl, test: { baseUrl: emulator.url, apiKey: emulatorKey } };

  const objects = objectQueries(db.sql);
  const directory = accountUpstreams({ sql: db.sql, box, egress: kernel.egress, config, dispatcher });
  const follower = new BatchFollower({
    store: { objects, accounts: tenancy.accounts },
    box,
    upstreams,
    accountUpstreams: directory,
    dispatcher,
    timeoutMs: config.upstreamTimeoutMs,
    record: kernel.record,
    flush: () => kernel.callLog.flush(),
    release: (hold) => limits.admission.releaseBatch(hold.id, hold.counters),
    logger,
  });
  follower.start();
  closer.add(() => follower.stop());

  const inFlight = new InFlightCalls();
  const streamEvents = openStreamEvents(config, logger);
  closer.add(() => streamEvents.close());
  const keepAlive = config.sseKeepAliveMs > 0 ? new SseKeepAlive(config.sseKeepAliveMs) : null;
  if (keepAlive) closer.add(() => keepAlive.close());
  const proxy: ProxyOptions = {
    resolver: kernel.keys,
    upstreams,
    dispatcher,
    timeoutMs: config.upstreamTimeoutMs,
    maxBodyBytes: config.maxBodyBytes,
    bodyIdleMs: config.bodyIdleMs,
    maxPdfPages: config.maxPdfPages,
    record: kernel.record,
    logger,
    inFlight,
    admission: limits.admission,
    keepAlive,
    streamEvents,
    accountUpstreams: directory,
    onUpstreamStatus: providerKeyCheck({
      logger,
      clock,
      report: (account, status) => {
        tenancy.accounts
          .setProviderKeyStatus(account.id, account.providerKeySealed!, status)
          .catch((error) =>
            logger.warn('provider key status update failed', { accountId: account.id, error }),
          );
      },
    }),
  };
  return {
    proxy,
    objects,
    follower,
    emulator,
    inFlight,
    openPassthrough: config.openPassthrough,
    maxFileBytes: config.maxFileBytes,
    modelsCacheMs: config.modelsCacheMs,
  };
}
