import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMITS } from '../src/lib/body-limit';
import { randomBase62 } from '../src/lib/ids';
import { freePort } from './kit/free-port';
import { childEnv, type SpawnedGateway, spawnGateway } from './kit/gateway';
import { TEST_DATABASE_URL } from './harness';
import {
  flood as flood_,
  type Flooded,
  type FloodOptions,
  stopFloodSender,
  underLoad as underLoadOf,
} from './kit/load-probe';

const MB = 1024 * 1024;
const OPERATOR = `operator-${randomBase62(24)}`;

// The gateway in a process of its own, as it runs: its RSS and its event loop are its alone.
let gw: SpawnedGateway;
let port = 0;
const dataDir = mkdtempSync(join(tmpdir(), 'keygate-body-'));
const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
beforeAll(async () => {
  gw = await spawnGateway({
    port: await freePort(),
    env: childEnv({
      KEYGATE_LOG_LEVEL: 'info',
      KEYGATE_DATA_DIR: dataDir,
      KEYGATE_SECRET: randomBase62(43),
      KEYGATE_OPERATOR_TOKEN: OPERATOR,
      KEYGATE_UPSTREAM_URL: 'http://127.0.0.1:9',
      ...(TEST_DATABASE_URL ? { DATABASE_URL: TEST_DATABASE_URL, KEYGATE_DB_SCHEMA: schema } : {}),
    }),
  });
  port = Number(new URL(gw.url).port);
}, 120_000);
afterAll(async () => {
  stopFloodSender();
  gw?.proc.kill('SIGTERM');
  await gw?.exited;
  if (TEST_DATABASE_URL) {
    const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    await sql`drop schema if exists ${sql(schema)} cascade`;
    await sql.end();
  }
  rmSync(dataDir, { recursive: true, force: true });
});

const flood = (path: string, total: number, opts: FloodOptions = {}) => flood_(port, path, total, opts);
const underLoad = <T>(work: () => Promise<T>) => underLoadOf(gw.url, gw.proc.pid!, work);

describe('body limits, enforced while reading', () => {
  it('a 400 MB unauthenticated body to the sign-in: 413 page, /healthz keeps answering (no stall), RSS grows < 50 MB', async () => {
    // The same probes with no flood: on a shared, loaded machine the probes' own p99 is not 0,
    // so the bound is on what the floods add to it.
    const idle = await underLoad(() => new Promise((r) => setTimeout(r, 2_000)));
    const { result, p99, rssGrowthMb, samples } = await underLoad(async () => {
      const out = [];
      for (let i = 0; i < 5; i++)
        out.push(
          ...(await Promise.all([
            flood('/dashboard/sign-in', 400 * MB),
            // Same-origin, so the cross-site check lets it through to the reader, which counts it.
            flood('/dashboard/sign-in', 400 * MB, { chunked: true, headers: ['origin: http://g'] }),
          ])),
        );
      return out;
    });
    console.log(
      `400 MB sign-in bodies: /healthz p99 ${p99.toFixed(1)} ms over ${samples} probes (idle p99 ${idle.p99.toFixed(1)} ms), gateway RSS growth ${rssGrowthMb.toFixed(1)} MB`,
    );
    for (const { status, contentType, body, sent } of result) {
      expect(status).toBe(413);
      expect(contentType).toMatch(/^text\/html/);
      expect(body).toContain(`at most ${BODY_LIMITS.signIn} bytes`);
      // The gateway stopped reading long before the end.
      expect(sent).toBeLessThan(400 * MB);
    }
    // The p99 against the 50 ms is printed above; asserted is what does not depend on the
    // machine's load: no stall of the other tenants (main stalled 4.7 s).
    expect(p99).toBeLessThan(1_000);
    expect(rssGrowthMb).toBeLessThan(50);
  }, 60_000);

  it('the Stripe webhook refuses a body over its limit in the provider shape, without reading it', async () => {
    // Declared: refused before the route runs (chunked, it would be read only once Stripe is set up).
    const { result, rssGrowthMb } = await underLoad(() =>
      flood('/billing/stripe/webhook', 400 * MB, { headers: ['stripe-signature: t=1,v1=x'] }),
    );
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body)).toMatchObject({
      type: 'error',
      error: { type: 'request_too_large' },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(rssGrowthMb).toBeLessThan(50);
  });

  it.each([
    ['/v1/organizations/api_keys', BODY_LIMITS.api],
    ['/operator/v1/accounts', BODY_LIMITS.api],
    ['/dashboard/settings', BODY_LIMITS.dashboardForm],
  ])('%s: one byte over its limit is 413, in its own shape', async (path, limit) => {
    const response = await flood(path, limit + 1, {
      headers: [`authorization: Bearer ${OPERATOR}`, 'x-api-key: kg_live_not_a_key'],
    });
    // Refused before authentication: the body is never read.
    expect(response.status).toBe(413);
    if (path.startsWith('/dashboard')) expect(response.contentType).toMatch(/^text\/html/);
    else expect(JSON.parse(response.body).type).toBe('error');
  });
});

describe('bodies that nest deep: each route bounds its parse (issue 29)', () => {
  const json = 'application/json';
  let testKey = '';
  beforeAll(async () => {
    const call = async (path: string, auth: Record<string, string>, body: unknown) => {
      const res = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': json },
        body: JSON.stringify(body),
      });
      expect(res.status, path).toBe(201);
      return (await res.json()) as Record<string, any>;
    };
    const account = await call(
      '/operator/v1/accounts',
      { authorization: `Bearer ${OPERATOR}` },
      { name: 'Nesting', plan: 'team', admin_email: 'admin@nesting.test', admin_name: 'Admin' },
    );
    // A member's test key: it may send batches (served by the built-in emulator) and telemetry.
    const key = await call(
      '/v1/organizations/api_keys',
      { 'x-api-key': account.admin.key.key },
      { name: 'member test key', kind: 'test', member_id: account.admin.member.id },
    );
    testKey = key.key;
  });

  /** One request under /healthz probes: its answer in the provider's shape, the loop never held, RSS bounded. */
  async function bounded(what: string, send: () => Promise<Flooded>) {
    const { result, p99, max, samples, rssGrowthMb } = await underLoad(send);
    console.log(
      `${what}: ${result.status}; /healthz p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms over ${samples} probes; RSS growth ${rssGrowthMb.toFixed(1)} MB`,
    );
    expect(result.status, result.body).toBeGreaterThanOrEqual(400);
    expect(result.status, result.body).toBeLessThan(500);
    // The JSON inside a chunked answer's framing, if it has one.
    const body = result.body.slice(result.body.indexOf('{'), result.body.lastIndexOf('}') + 1);
    expect(JSON.parse(body)).toMatchObject({ type: 'error', error: { type: expect.any(String) } });
    // The bound is a p99 of 100 ms (printed above). Asserted is what a shared 2-core machine
    // under a load of 12 allows (single probes near 300 ms with nothing to stall): before the
    // reader, the batch held the loop 10.7 s and OTLP several seconds.
    expect(p99).toBeLessThan(500);
    expect(rssGrowthMb).toBeLessThan(50);
    return { ...result, body };
  }

  it.each(['/idp/v1/device/code', '/idp/v1/device/token', '/idp/v1/token'])(
    '%s, no credential: 1 MiB of [ is refused without holding the loop, 16 KB too deep',
    async (path) => {
      const headers = ['connection: close'];
      const big = await bounded(`${path} 1 MiB of [`, () =>
        flood(path, 1024 * 1024, { type: json, fill: '[', headers }),
      );
      expect(big.status).toBe(413);
      // Under the byte bound, the nesting bound refuses it.
      const deep = await flood(path, 16_000, { type: json, fill: '[', headers });
      expect(deep.status).toBe(400);
      expect(JSON.parse(deep.body).error.message).toMatch(/deeper than 256 levels/);
    },
    60_000,
  );

  it('a 24 MB batch of [ with a test key: 413 naming the limit, the loop never held', async () => {
    const out = await bounded('batch 24 MB of [', () =>
      flood('/v1/messages/batches', 24 * MB, {
        type: json,
        fill: '[',
        headers: [`authorization: Bearer ${testKey}`, 'connection: close'],
      }),
    );
    expect(out.status).toBe(413);
    expect(JSON.parse(out.body).error.message).toMatch(/at most 8388608 bytes.*several batches/);
    // Sent in chunks, no length declared: counted as it arrives.
    const chunked = await bounded('batch 24 MB of [, chunked', () =>
      flood('/v1/messages/batches', 24 * MB, {
        type: json,
        fill: '[',
        chunked: true,
        headers: [`authorization: Bearer ${testKey}`],
      }),
    );
    expect(chunked.status).toBe(413);
    // Under the byte bound, the nesting bound refuses it.
    const deep = await bounded('batch 1 MB of [', () =>
      flood('/v1/messages/batches', MB, {
        type: json,
        fill: '[',
        headers: [`authorization: Bearer ${testKey}`, 'connection: close'],
      }),
    );
    expect(deep.status).toBe(400);
  }, 60_000);

  it('/otlp/v1/logs: 16 MB of [ gzipped to ~16 KB is refused without holding the loop', async () => {
    const bomb = gzipSync(Buffer.alloc(16 * 1000 * 1000, '['));
    expect(bomb.length).toBeLessThan(20_000);
    const out = await bounded('OTLP gzip of 16 MB of [', async () => {
      const res = await fetch(`${gw.url}/otlp/v1/logs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${testKey}`, 'content-type': json, 'content-encoding': 'gzip' },
        body: bomb,
      });
      return {
        status: res.status,
        contentType: res.headers.get('content-type'),
        body: await res.text(),
        sent: bomb.length,
      };
    });
    expect(JSON.parse(out.body).error.message).toMatch(/deeper than 256 levels/);
  }, 60_000);
});
