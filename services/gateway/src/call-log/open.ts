import type { Config } from '../config';
import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import { Spool } from './spool';
import { CallLogThread, type CallLog } from './thread';
import { CallLogWriter } from './writer';

export type { CallLog } from './thread';

/**
 * The gateway's call log: on its own thread (KEYGATE_CALL_LOG_THREAD, on by default), or
 * in-process. With the call log off nothing is ever enqueued, and no thread is started.
 */
export async function openCallLog(
  config: Config,
  store: Pick<Store, 'db' | 'calls'>,
  spooled: boolean,
  logger: Logger,
): Promise<CallLog> {
  const spool = spooled
    ? { dir: config.spoolDir, maxBytes: config.spoolMaxBytes, syncMs: config.spoolSyncMs }
    : null;
  const writer = {
    flushIntervalMs: config.flushIntervalMs,
    statementTimeoutMs: config.callLogStatementTimeoutMs,
  };
  const { db } = store;
  if (config.callLog && config.callLogThread)
    return CallLogThread.start(
      { url: db.url, ...(db.schema ? { schema: db.schema } : {}), spool, writer },
      logger,
      undefined,
      config.callLogHandOverMs,
    );
  const opened = spool ? await Spool.open({ ...spool, logger }) : null;
  return new CallLogWriter(store.calls, { ...writer, spool: opened, logger });
}
