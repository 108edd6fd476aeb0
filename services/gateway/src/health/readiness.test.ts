import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { readiness, tcpProbe, type ReadinessDeps } from './readiness';

const healthy = (): ReadinessDeps => ({
  database: { ping: async () => {}, pendingMigrations: async () => [] },
  callLog: { pending: 0, backlogSince: null },
  upstreamUrl: 'http://127.0.0.1:9',
  stallMs: 60_000,
  probeUpstream: async () => true,
});

describe('readiness', () => {
  it('is ready when the database answers, migrations are applied and the call log flows', async () => {
    const r = await readiness(healthy())();
    expect(r).toMatchObject({
      status: 'ready',
      checks: {
        database: { ok: true },
        migrations: { ok: true, pending: [] },
        call_log: { ok: true, queued: 0, oldest_wait_ms: 0 },
      },
      upstream: { reachable: true, url: 'http://127.0.0.1:9' },
    });
  });

  it('fails within the timeout when the database does not answer', async () => {
    const start = performance.now();
    const r = await readiness({
      ...healthy(),
      timeoutMs: 100,
      database: { ping: () => new Promise(() => {}), pendingMigrations: async () => [] },
    })();
    expect(performance.now() - start).toBeLessThan(1_000);
    expect(r.status).toBe('not_ready');
    expect(r.checks.database).toEqual({ ok: false, error: 'no answer within 100 ms' });
    expect(r.checks.migrations.ok).toBe(false);
  });

  it('names the database error', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const r = await readiness({
      ...healthy(),
      database: { ping: () => Promise.reject(refused), pendingMigrations: async () => [] },
    })();
    expect(r.checks.database).toEqual({ ok: false, error: 'unreachable (ECONNREFUSED)' });
  });

  it('is not ready while a migration file is not recorded as applied', async () => {
    const r = await readiness({
      ...healthy(),
      database: { ping: async () => {}, pendingMigrations: async () => ['009_next.sql'] },
    })();
    expect(r.status).toBe('not_ready');
    expect(r.checks.migrations).toEqual({ ok: false, pending: ['009_next.sql'] });
  });

  it('is not ready when queued call records waited past the bound with no batch written', async () => {
    let now = 1_000_000;
    const callLog = { pending: 3, backlogSince: now };
    const check = readiness({ ...healthy(), callLog, clock: () => now, stallMs: 5_000 });
    now += 4_000;
    expect((await check()).checks.call_log).toMatchObject({ ok: true, queued: 3, oldest_wait_ms: 4_000 });
    now += 2_000;
    expect(await check()).toMatchObject({
      status: 'not_ready',
      checks: { call_log: { ok: false, oldest_wait_ms: 6_000, limit_ms: 5_000 } },
    });
  });

  describe('a database outage with databaseGraceMs (known keys served from memory)', () => {
    const outage = () => {
      let now = 1_000_000;
      let up = true;
      const spool = { spoolFull: false, spoolBytes: 0, spoolError: null as string | null };
      const refused = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
      const check = readiness({
        ...healthy(),
        clock: () => now,
        stallMs: 5_000,
        databaseGraceMs: 60_000,
        callLog: { pending: 7, backlogSince: now, status: () => spool },
        database: {
          ping: async () => {
            if (!up) throw refused;
          },
          pendingMigrations: async () => [],
        },
      });
      return { check, spool, advance: (ms: number) => (now += ms), down: (d: boolean) => (up = !d) };
    };

    it('stays ready (degraded) while records reach the spool, until the grace after the last answer', async () => {
      const o = outage();
      expect((await o.check()).status).toBe('ready');
      o.down(true);
      o.advance(30_000);
      const r = await o.check();
      expect(r.status).toBe('degraded');
      expect(r.checks.database).toMatchObject({
        ok: false,
        error: 'unreachable (ECONNREFUSED)',
        serving_from_memory_until: new Date(1_060_000).toISOString(),
      });
      // The backlog waits in the spool, past the stall bound: no stall while the database is away.
      expect(r.checks.call_log).toMatchObject({ ok: true, queued: 7, oldest_wait_ms: 30_000 });
      expect(r.checks.migrations).toEqual({ ok: true, pending: [] });
      o.advance(30_001);
      expect((await o.check()).status).toBe('not_ready');
      o.down(false);
      expect((await o.check()).status).toBe('not_ready'); // the backlog is now a stall again
    });

    it('is not ready at once when the spool is full or failing', async () => {
      for (const fault of [{ spoolFull: true }, { spoolError: 'ENOSPC' }]) {
        const o = outage();
        await o.check();
        Object.assign(o.spool, fault);
        o.down(true);
        expect((await o.check()).status).toBe('not_ready');
      }
    });

    it('is not ready at once without a grace', async () => {
      const r = await readiness({
        ...healthy(),
        database: { ping: () => Promise.reject(new Error('down')), pendingMigrations: async () => [] },
      })();
      expect(r.status).toBe('not_ready');
    });
  });

  it('reports an unreachable provider without failing readiness, and reuses the probe for a while', async () => {
    let probes = 0;
    let now = 0;
    const check = readiness({
      ...healthy(),
      clock: () => now,
      upstreamTtlMs: 30_000,
      probeUpstream: async () => (probes++, false),
    });
    expect(await check()).toMatchObject({ status: 'ready', upstream: { reachable: false } });
    now += 10_000;
    await check();
    expect(probes).toBe(1);
    now += 30_000;
    await check();
    expect(probes).toBe(2);
  });

  it('probes the upstream with a TCP connection only', async () => {
    const server = createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    expect(await tcpProbe(new URL(`http://127.0.0.1:${port}`), 1_000)).toBe(true);
    await new Promise((r) => server.close(r));
    expect(await tcpProbe(new URL(`http://127.0.0.1:${port}`), 1_000)).toBe(false);
  });
});
