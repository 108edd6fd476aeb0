import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMITS } from '../src/lib/body-limit';
import { randomBase62 } from '../src/lib/ids';
import { freePort } from './kit/free-port';
import { childEnv, type SpawnedGateway, spawnGateway } from './kit/gateway';
import { TEST_DATABASE_URL } from './harness';

const MB = 1024 * 1024;
const SENDER = join(import.meta.dirname, 'flood-sender.mjs');
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
  gw?.proc.kill('SIGTERM');
  await gw?.exited;
  if (TEST_DATABASE_URL) {
    const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    await sql`drop schema if exists ${sql(schema)} cascade`;
    await sql.end();
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** The gateway's resident memory, from the kernel. */
const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

interface Flooded {
  status: number;
  contentType: string | null;
  body: string;
  sent: number;
}

/** Streams `total` bytes as a request body from a process of its own; the answer, if one came. */
function flood(
  path: string,
  total: number,
  opts: { chunked?: boolean; headers?: string[] } = {},
): Promise<Flooded> {
  return new Promise((resolve, reject) => {
    const args = [SENDER, String(port), path, String(total), opts.chunked ? 'chunked' : 'length'];
    execFile(process.execPath, [...args, JSON.stringify(opts.headers ?? [])], (err, stdout) =>
      err ? reject(err) : resolve(JSON.parse(stdout) as Flooded),
    );
  });
}

/** /healthz answered every 10 ms while `work` runs: the latencies, and the peak RSS growth. */
async function underLoad<T>(
  work: () => Promise<T>,
): Promise<{ result: T; p99: number; samples: number; rssGrowthMb: number }> {
  // Warm: the probe's own first connection is not the gateway's latency.
  for (let i = 0; i < 20; i++) await (await fetch(`${gw.url}/healthz`)).text();
  const pid = gw.proc.pid!;
  const before = rssOf(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10);
  const latencies: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      const t = performance.now();
      const res = await fetch(`${gw.url}/healthz`);
      await res.text();
      latencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  try {
    const result = await work();
    return {
      result,
      p99: percentile(latencies, 0.99),
      samples: latencies.length,
      rssGrowthMb: (peak - before) / MB,
    };
  } finally {
    running = false;
    clearInterval(sampler);
    await probe;
  }
}

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0;

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
            flood('/dashboard/sign-in', 400 * MB, { chunked: true }),
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
    const { result, rssGrowthMb } = await underLoad(() =>
      flood('/billing/stripe/webhook', 400 * MB, { chunked: true, headers: ['stripe-signature: t=1,v1=x'] }),
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
