import { connect } from 'node:net';

export interface ReadinessDeps {
  database: { ping(): Promise<void>; pendingMigrations(): Promise<string[]> };
  /** The call log writer; null when the call log is off. */
  callLog: {
    readonly pending: number;
    readonly backlogSince: number | null;
    status?(): { spoolFull: boolean; spoolBytes: number; spoolError: string | null };
  } | null;
  upstreamUrl: string;
  clock?: () => number;
  /** How long the database may take to answer. */
  timeoutMs?: number;
  /** How long queued call records may wait with no batch written before the writer counts as stalled. */
  stallMs: number;
  /** How long an upstream probe result is reused. */
  upstreamTtlMs?: number;
  /** Opens a TCP connection to the upstream; resolves true when it connects. */
  probeUpstream?: (url: URL, timeoutMs: number) => Promise<boolean>;
  /**
   * While the database is unreachable, the instance stays ready (`degraded`) this long after it
   * last answered, as long as call records still reach the spool: known keys are served from
   * memory meanwhile (KEYGATE_KEY_STALE_MAX_MS). 0 or absent: unready at once.
   */
  databaseGraceMs?: number;
}

interface Check {
  ok: boolean;
  [detail: string]: unknown;
}

export interface Readiness {
  /** `degraded`: the database is away, calls are served from memory and spooled (still 200). */
  status: 'ready' | 'degraded' | 'not_ready';
  checks: { database: Check; migrations: Check; call_log: Check };
  /** Informational: the provider being unreachable does not make this instance unready. */
  upstream: { reachable: boolean; url: string; checked_at: string };
}

class Timeout extends Error {}

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const reason = (err: unknown) => (err as { code?: string }).code ?? (err as Error).message;

/** A TCP connection only: nothing is sent to the provider, no key is used. */
export function tcpProbe(url: URL, timeoutMs: number): Promise<boolean> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/**
 * Readiness of one instance: the database answers within `timeoutMs`, every migration file
 * is recorded as applied, and the call log writer is not stalled. Concurrent probes share
 * one check, so a slow database does not pile queries up.
 */
export function readiness(deps: ReadinessDeps): () => Promise<Readiness> {
  const clock = deps.clock ?? Date.now;
  const timeoutMs = deps.timeoutMs ?? 1_000;
  const probe = deps.probeUpstream ?? tcpProbe;
  const upstreamUrl = new URL(deps.upstreamUrl);
  let upstream: { reachable: boolean; at: number } | null = null;
  let inflight: Promise<Readiness> | null = null;
  // The gateway applied every migration just before this was made: the database answered then.
  let databaseOkAt = clock();
  let lastMigrations: Check = { ok: true, pending: [] };

  async function database(): Promise<[Check, Check]> {
    const started = clock();
    try {
      await within(deps.database.ping(), timeoutMs);
    } catch (err) {
      const unknown = { ok: false, error: 'database not checked' };
      return [
        { ok: false, error: err instanceof Timeout ? err.message : `unreachable (${reason(err)})` },
        unknown,
      ];
    }
    const latency = clock() - started;
    try {
      const pending = await within(deps.database.pendingMigrations(), timeoutMs);
      return [
        { ok: true, latency_ms: latency },
        { ok: pending.length === 0, pending },
      ];
    } catch (err) {
      return [
        { ok: true, latency_ms: latency },
        { ok: false, error: reason(err) },
      ];
    }
  }

  function callLog(): Check {
    if (!deps.callLog) return { ok: true, enabled: false };
    const since = deps.callLog.backlogSince;
    const waitMs = since === null ? 0 : clock() - since;
    // A full spool keeps serving, but new calls are then only in memory until written: not ready.
    const spool = deps.callLog.status?.();
    const spoolState = spool
      ? { spool_bytes: spool.spoolBytes, spool_full: spool.spoolFull, spool_error: spool.spoolError }
      : {};
    return {
      ok: waitMs <= deps.stallMs && !spool?.spoolFull,
      queued: deps.callLog.pending,
      oldest_wait_ms: waitMs,
      limit_ms: deps.stallMs,
      ...spoolState,
    };
  }

  async function upstreamState() {
    const now = clock();
    if (!upstream || now - upstream.at >= (deps.upstreamTtlMs ?? 30_000)) {
      upstream = { reachable: await probe(upstreamUrl, timeoutMs), at: now };
    }
    return {
      reachable: upstream.reachable,
      url: upstreamUrl.origin,
      checked_at: new Date(upstream.at).toISOString(),
    };
  }

  /** Until when a database outage leaves this instance serving, or null when it must not. */
  function graceUntil(): number | null {
    const grace = deps.databaseGraceMs ?? 0;
    if (grace <= 0 || !lastMigrations.ok) return null;
    const spool = deps.callLog?.status?.();
    if (deps.callLog && (!spool || spool.spoolFull || spool.spoolError)) return null;
    const until = databaseOkAt + grace;
    return clock() <= until ? until : null;
  }

  async function check(): Promise<Readiness> {
    const [[db, migrations], up] = await Promise.all([database(), upstreamState()]);
    if (db.ok) {
      databaseOkAt = clock();
      lastMigrations = migrations;
    }
    const checks = { database: db, migrations, call_log: callLog() };
    if (Object.values(checks).every((c) => c.ok)) return { status: 'ready', checks, upstream: up };
    const until = db.ok ? null : graceUntil();
    if (until === null) return { status: 'not_ready', checks, upstream: up };
    // Records wait in the spool, so a backlog is no stall while the database is away.
    return {
      status: 'degraded',
      checks: {
        database: { ...db, serving_from_memory_until: new Date(until).toISOString() },
        migrations: lastMigrations,
        call_log: { ...checks.call_log, ok: true },
      },
      upstream: up,
    };
  }

  return () =>
    (inflight ??= check().finally(() => {
      inflight = null;
    }));
}
