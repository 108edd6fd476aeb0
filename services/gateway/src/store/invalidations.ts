import { sentIn, type Database, type Sql } from './database';

export const INVALIDATION_CHANNEL = 'keygate_invalidate';

/** What a cached key depends on: the key itself, its member, or its account; or an account's budgets. */
export type Invalidation =
  | `key:${string}`
  | `member:${string}`
  | `account:${string}`
  | `budgets:${string}`
  | `prices:${string}`;

/**
 * Tells every gateway instance to drop cached keys, from inside the changing transaction:
 * NOTIFY is delivered on commit (and never if it rolls back), and the row is what pollers read.
 */
export async function invalidate(tx: Sql, payload: Invalidation): Promise<void> {
  await tx`insert into invalidations (payload) values (${payload})`;
  await tx`select pg_notify(${INVALIDATION_CHANNEL}, ${payload})`;
  sentIn(tx, payload);
}

export interface WatchOptions {
  /** LISTEN for instant delivery; the poll then only covers what a dropped connection missed. */
  listen: boolean;
  pollMs: number;
  onError(error: unknown, where: 'listen' | 'poll'): void;
  /**
   * The LISTEN connection is back after a drop: what was sent meanwhile is lost, and the poll
   * reads back only LOOKBACK_SECONDS, so whatever this instance holds may be out of date.
   */
  onReconnect?(): void;
}

// A transaction may commit a little after its row was stamped; re-reading a window of recent
// rows (and skipping the ones already seen) catches it. Evicting twice is harmless anyway.
const LOOKBACK_SECONDS = 10;
const PRUNE_EVERY_MS = 60_000;

/** Delivers invalidations through LISTEN/NOTIFY and a poll of recent rows; returns a stop function. */
export async function watchInvalidations(
  db: Database,
  apply: (payload: string) => void,
  opts: WatchOptions,
): Promise<() => Promise<void>> {
  const seen = new Map<string, number>();
  let stopListening = async () => {};
  if (opts.listen) {
    try {
      let connected = false;
      const listener = await db.sql.listen(INVALIDATION_CHANNEL, apply, () => {
        // Notifications sent while the connection was down are lost; the poll covers the last
        // seconds of the gap, and onReconnect the rest.
        if (connected) {
          opts.onReconnect?.();
          void poll();
        }
        connected = true;
      });
      stopListening = listener.unlisten;
    } catch (error) {
      opts.onError(error, 'listen');
    }
  }

  let lastPrune = 0;
  let polling: Promise<void> | null = null;
  const poll = () =>
    (polling ??= (async () => {
      try {
        const rows = await db.sql<{ id: string; payload: string }[]>`
          select id::text, payload from invalidations
          where created_at > clock_timestamp() - make_interval(secs => ${LOOKBACK_SECONDS})`;
        const now = Date.now();
        for (const row of rows) {
          if (seen.has(row.id)) continue;
          seen.set(row.id, now);
          apply(row.payload);
        }
        for (const [id, at] of seen) if (now - at > LOOKBACK_SECONDS * 2000) seen.delete(id);
        if (now - lastPrune > PRUNE_EVERY_MS) {
          lastPrune = now;
          await db.sql`delete from invalidations where created_at < now() - interval '1 hour'`;
        }
      } catch (error) {
        opts.onError(error, 'poll');
      } finally {
        polling = null;
      }
    })());

  // Rows from before this instance started cannot concern its (empty) cache.
  await primeSeen(db.sql, seen).catch((error) => opts.onError(error, 'poll'));
  const timer = setInterval(() => void poll(), opts.pollMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await polling;
    await stopListening();
  };
}

async function primeSeen(sql: Sql, seen: Map<string, number>): Promise<void> {
  const rows = await sql<{ id: string }[]>`
    select id::text from invalidations where created_at > clock_timestamp() - make_interval(secs => ${LOOKBACK_SECONDS})`;
  const now = Date.now();
  for (const r of rows) seen.set(r.id, now);
}
