import { startEmulator, type Emulator } from '@keygate/emulator';
import { afterAll, beforeAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createAccount, createKey, type NewKey, type ServiceDeps } from '../src/accounts/service';
import { randomBase62 } from '../src/lib/ids';
import { SecretBox } from '../src/lib/secret-box';
import { createStore } from '../src/stores';
import { openDatabase, type Store } from '../src/store';
import { freePort } from './kit/free-port';
import { type SpawnedGateway, spawnGateway } from './kit/gateway';
import { waitFor } from './kit/wait';

/**
 * Gateway instances as separate processes (the compiled build, `keygate serve`) on one
 * PostgreSQL schema and one Redis, behind a HAProxy of their own on loopback: what the
 * multi-instance test and bench/faults.ts drive.
 */
export const HAPROXY = process.env.HAPROXY_BIN ?? '/usr/sbin/haproxy';
/** The spool's group-commit interval the instances run with (the `spool` branch's KEYGATE_SPOOL_SYNC_MS). */
export const SPOOL_SYNC_MS = 50;

export interface Instance {
  name: string;
  url: string;
  dataDir: string;
  proc: ChildProcess | null;
  /** Everything the current process wrote on stderr. */
  stderr(): string;
  start(): Promise<void>;
  /** Sends the signal; resolves with the exit code (or the signal's name) once it is gone. */
  stop(signal: NodeJS.Signals): Promise<number | string | null>;
}

export interface Cluster {
  /** The balancer's URL. */
  url: string;
  instances: Instance[];
  schema: string;
  databaseUrl: string;
  env: Record<string, string>;
  /** HAProxy's view of each server: UP, DOWN, MAINT, … */
  serverStates(): Promise<Record<string, string>>;
  /** Waits until HAProxy sees `name` in `state`. */
  waitFor(name: string, state: 'UP' | 'DOWN', timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface ClusterOptions {
  count: number;
  databaseUrl: string;
  redisUrl: string | null;
  upstreamUrl: string;
  env?: Record<string, string>;
  /** One instance directly, without the balancer in front (bench). */
  balancer?: boolean;
}

function haproxyConfig(port: number, socket: string, servers: { name: string; url: string }[]): string {
  return `global
  maxconn 4096
  stats socket ${socket} mode 600 level admin

defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  timeout queue 10s
  # A refused connection or an empty answer (an instance stopping) is tried on another instance.
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response

frontend keygate
  bind 127.0.0.1:${port}
  default_backend gateways

backend gateways
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  timeout check 2s
  default-server inter 250ms fall 2 rise 2
  http-response set-header x-keygate-instance %[srv_name]
${servers.map((s) => `  server ${s.name} ${new URL(s.url).host} check`).join('\n')}
`;
}

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  await (await import('../scripts/build.mjs' as string)).ensureBuilt();
  const work = mkdtempSync(join(tmpdir(), 'keygate-cluster-'));
  const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
  const { DATABASE_URL: _d, KEYGATE_URL: _u, REDIS_URL: _r, ...inherited } = process.env;
  const env: Record<string, string> = {
    ...(inherited as Record<string, string>),
    HOST: '127.0.0.1',
    DATABASE_URL: opts.databaseUrl,
    KEYGATE_DB_SCHEMA: schema,
    KEYGATE_SECRET: `cluster-secret-${randomBase62(24)}`,
    KEYGATE_OPERATOR_TOKEN: `cluster-operator-${randomBase62(24)}`,
    KEYGATE_UPSTREAM_URL: opts.upstreamUrl,
    KEYGATE_LOG_LEVEL: 'warn',
    KEYGATE_SPOOL_SYNC_MS: String(SPOOL_SYNC_MS),
    ...(opts.redisUrl ? { REDIS_URL: opts.redisUrl } : {}),
    ...opts.env,
  };
  const instances: Instance[] = [];
  for (let i = 1; i <= opts.count; i++) {
    const port = await freePort();
    const dataDir = join(work, `gw${i}`);
    let gw: SpawnedGateway | null = null;
    const instance: Instance = {
      name: `gw${i}`,
      url: `http://127.0.0.1:${port}`,
      dataDir,
      get proc() {
        return gw?.proc ?? null;
      },
      stderr: () => gw?.stderr() ?? '',
      async start() {
        gw = await spawnGateway({
          env: { ...env, KEYGATE_DATA_DIR: dataDir },
          port,
          ready: '/readyz',
          readyTimeoutMs: 60_000,
        });
      },
      async stop(signal) {
        return gw ? gw.stop(signal) : null;
      },
    };
    instances.push(instance);
  }
  // Started one after another: the first applies the migrations, the others find them done.
  for (const instance of instances) await instance.start();

  let haproxy: ChildProcess | null = null;
  let url = instances[0]!.url;
  const socket = join(work, 'haproxy.sock');
  if (opts.balancer !== false) {
    const port = await freePort();
    const config = join(work, 'haproxy.cfg');
    writeFileSync(config, haproxyConfig(port, socket, instances));
    let out = '';
    haproxy = spawn(HAPROXY, ['-f', config, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
    haproxy.stdout!.on('data', (d) => (out += d));
    haproxy.stderr!.on('data', (d) => (out += d));
    url = `http://127.0.0.1:${port}`;
    const proxy = haproxy;
    await waitFor(
      async () => {
        if (proxy.exitCode !== null) throw new Error(`haproxy exited:\n${out}`);
        return (await fetch(`${url}/healthz`)).ok;
      },
      { timeout: 10_000, what: `haproxy at ${url}` },
    ).catch((err: Error) => {
      throw new Error(`haproxy did not start: ${err.message}\n${out}`);
    });
  }

  const serverStates = async (): Promise<Record<string, string>> => {
    const csv = await new Promise<string>((resolve, reject) => {
      let text = '';
      const s = connect(socket, () => s.end('show stat\n'));
      s.on('data', (d) => (text += d));
      s.on('end', () => resolve(text));
      s.on('error', reject);
    });
    const lines = csv
      .split('\n')
      .filter((l) => l.startsWith('gateways,') && !l.startsWith('gateways,BACKEND'));
    return Object.fromEntries(lines.map((l) => l.split(',')).map((f) => [f[1]!, f[17]!.split(' ')[0]!]));
  };

  return {
    url,
    instances,
    schema,
    databaseUrl: opts.databaseUrl,
    env,
    serverStates,
    async waitFor(name, state, timeoutMs = 15_000) {
      await waitFor(async () => (await serverStates())[name] === state, {
        timeout: timeoutMs,
        interval: 50,
        what: `haproxy to see ${name} ${state}`,
      });
    },
    async close() {
      if (haproxy && haproxy.exitCode === null) {
        const gone = new Promise((r) => haproxy!.once('exit', r));
        haproxy.kill('SIGKILL');
        await gone;
      }
      await Promise.all(instances.map((i) => i.stop('SIGTERM')));
      const sql = postgres(opts.databaseUrl, { max: 1, onnotice: () => {} });
      await sql`drop schema if exists ${sql(schema)} cascade`;
      await sql.end();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

export interface Seeded {
  store: Store;
  deps: ServiceDeps;
  accountId: string;
  adminKey: string;
  newKey(limits?: Partial<NewKey>): Promise<{ id: string; secret: string }>;
  /** How often each call id of `keyId` is recorded. */
  recordCounts(keyId: string): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** A store on the cluster's schema, an account on it (with an admin key) and its keys. */
export async function seedCluster(
  cluster: Pick<Cluster, 'databaseUrl' | 'schema' | 'env'>,
  providerKey: string,
): Promise<Seeded> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keygate-seed-'));
  const store = createStore(
    await openDatabase({ url: cluster.databaseUrl, dataDir, schema: cluster.schema, max: 2 }),
  );
  const deps: ServiceDeps = { store, box: new SecretBox(cluster.env.KEYGATE_SECRET!), clock: Date.now };
  const created = await createAccount(deps, {
    name: 'Cluster',
    plan: 'team',
    providerKey,
    adminEmail: 'admin@cluster.test',
    adminName: 'Admin',
    trialDays: 30,
  });
  const accountId = created.account.id;
  return {
    store,
    deps,
    accountId,
    adminKey: created.admin!.secret,
    async newKey(limits = {}) {
      const { key, secret } = await createKey(deps, {
        accountId,
        kind: 'live',
        memberId: null,
        app: 'cluster',
        environment: 'test',
        // Keys without the plan's default limits unless a test gives some.
        planDefaults: false,
        ...limits,
      });
      return { id: key.id, secret };
    },
    async recordCounts(keyId) {
      // A connection of its own each time: a pool that lived through a database restart may hang.
      const sql = postgres(cluster.databaseUrl, {
        max: 1,
        onnotice: () => {},
        connection: { search_path: cluster.schema },
      });
      try {
        const rows = await sql<
          { id: string; n: number }[]
        >`select id, count(*)::int as n from calls where key_id = ${keyId} group by id`;
        return new Map(rows.map((r) => [r.id, r.n]));
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
    async close() {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A cluster of `count` instances with the emulator as provider and a seeded account, for one describe block. */
export interface ClusterContext {
  emulator: Emulator;
  cluster: Cluster;
  seeded: Seeded;
}

/**
 * Starts the emulator, `count` compiled instances behind HAProxy (rate and spend counters in
 * Redis when `redisUrl` is given, else PostgreSQL) and a seeded account before the describe
 * block's tests, and closes them after. The fields are filled in by `beforeAll`.
 */
export function useCluster(opts: {
  databaseUrl: string;
  redisUrl: string | null;
  providerKey: string;
  count?: number;
  timeoutMs?: number;
}): ClusterContext {
  const ctx = {} as ClusterContext;
  const count = opts.count ?? 3;
  beforeAll(async () => {
    ctx.emulator = await startEmulator({ port: 0, apiKey: opts.providerKey });
    ctx.cluster = await startCluster({
      count,
      databaseUrl: opts.databaseUrl,
      redisUrl: opts.redisUrl,
      upstreamUrl: ctx.emulator.url,
    });
    ctx.seeded = await seedCluster(ctx.cluster, opts.providerKey);
    await ctx.cluster.waitFor(`gw${count}`, 'UP');
  }, opts.timeoutMs ?? 120_000);
  afterAll(async () => {
    await ctx.seeded?.close();
    await ctx.cluster?.close();
    await ctx.emulator?.close();
  });
  return ctx;
}

/** Each capped call answers with all of its max_tokens: 400 Opus 4.5 output tokens, one cent. */
export const CAPPED_MAX_TOKENS = 400;
export const CAPPED_BODY = JSON.stringify({
  model: 'claude-opus-4-5',
  max_tokens: CAPPED_MAX_TOKENS,
  messages: [{ role: 'user', content: 'hello' }],
});

export interface CappedAnswer {
  status: number;
  error: string | null;
  retry: string | null;
  instance: string | null;
}

/** One Opus 4.5 call of CAPPED_MAX_TOKENS through `url` (a cluster's HAProxy or one instance). */
export async function cappedCall(url: string, key: string): Promise<CappedAnswer> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'x-emulator-output-tokens': String(CAPPED_MAX_TOKENS),
    },
    body: CAPPED_BODY,
  });
  // The balancer answers in HTML when no instance can take a call: say which answer it was.
  const text = await res.text();
  let body: { error?: { type: string } };
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(
      `${res.status} from ${res.headers.get('x-keygate-instance') ?? 'the balancer'}: ${text.slice(0, 200)}`,
    );
  }
  return {
    status: res.status,
    error: body.error?.type ?? null,
    retry: res.headers.get('x-should-retry'),
    instance: res.headers.get('x-keygate-instance'),
  };
}
