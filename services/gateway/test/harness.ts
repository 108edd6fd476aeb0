import { startEmulator, type Emulator } from '@keygate/emulator';
import { cacheWrites } from '@keygate/protocol';
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import { createAccount, createKey, type ServiceDeps } from '../src/accounts/service';
import { loadConfig, type Config } from '../src/config';
import { randomBase62 } from '../src/lib/ids';
import { createLogger } from '../src/lib/logger';
import { startGateway, type Gateway } from '../src/server';
import { afterAll, beforeAll } from 'vitest';
import { createStore, type WholeStore } from '../src/stores';
import { migrate, openDatabase } from '../src/store';
import { callAt } from './kit/call-records';

export { callAt };
import { COMPILED, spawnCompiledGateway } from './compiled-gateway';
import { newDataDir } from './data-dir';
import type { PriceBook } from '../src/pricing/catalog/price-book';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? null;
export const PROVIDER_KEY = `sk-ant-api03-${randomBase62(40)}`;

export interface SeededAccount {
  id: string;
  adminKey: string;
  adminKeyId: string;
  adminMemberId: string;
}

export interface Stack {
  gateway: Gateway;
  emulator: Emulator;
  /** Every log line the gateway wrote. */
  logs: string[];
  account: { id: string };
  /** A live app key of the account, and its id. */
  appKey: string;
  keyId: string;
  env: Record<string, string>;
  config: Config;
  /** The PostgreSQL schema this stack's tables live in. */
  schema: string;
  dataDir: string;
  deps: ServiceDeps & { store: WholeStore; prices: PriceBook };
  /** Another account with an admin member and an admin key. */
  seedAccount(opts?: {
    plan?: 'solo' | 'team' | 'scale';
    name?: string;
    trialDays?: number;
  }): Promise<SeededAccount>;
  /** A second gateway instance on the same database (closed with the stack). */
  startPeer(env?: Record<string, string>): Promise<Gateway>;
  newKey(opts?: {
    kind?: 'live' | 'test' | 'admin';
    memberId?: string;
    app?: string;
    environment?: string;
  }): Promise<{ id: string; secret: string }>;
  /** Waits until the call log holds the gateway's queued records, then returns them. */
  calls(): Promise<Record<string, any>[]>;
  close(): Promise<void>;
}

/**
 * A real gateway on loopback, with the emulator as the provider and a fresh account. It uses
 * TEST_DATABASE_URL (each stack in its own schema) or, without it, the embedded database.
 */
export async function startStack(
  env: Record<string, string> = {},
  opts: { clock?: () => number } = {},
): Promise<Stack> {
  const clock = opts.clock ?? Date.now;
  const emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
  const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
  const dataDir = newDataDir('keygate-test-');
  const config = loadConfig({
    PORT: '0',
    KEYGATE_DATA_DIR: dataDir,
    KEYGATE_UPSTREAM_URL: emulator.url,
    KEYGATE_SECRET: randomBase62(43),
    KEYGATE_OPERATOR_TOKEN: 'operator-token-0123456789',
    KEYGATE_FLUSH_INTERVAL_MS: '10',
    ...(TEST_DATABASE_URL ? { DATABASE_URL: TEST_DATABASE_URL } : {}),
    ...env,
  });
  const logs: string[] = [];
  const logger = createLogger('debug', (line) => logs.push(line));
  if (COMPILED && opts.clock) throw new Error('a test clock cannot reach the compiled gateway');
  const gateway = COMPILED
    ? await spawnCompiledGateway({
        config,
        schema,
        logs,
        databaseUrl: TEST_DATABASE_URL,
        env: {
          KEYGATE_DATA_DIR: dataDir,
          KEYGATE_UPSTREAM_URL: emulator.url,
          KEYGATE_SECRET: config.secret!,
          KEYGATE_OPERATOR_TOKEN: config.operatorToken!,
          KEYGATE_FLUSH_INTERVAL_MS: '10',
          ...env,
        },
      })
    : await startGateway(config, { logger, schema, clock });
  const deps = {
    store: gateway.store,
    box: new (await import('../src/lib/secret-box')).SecretBox(config.secret!),
    clock,
    // The gateway's prices as this process reads them (reload() after the operator changes them).
    prices: new (await import('../src/pricing/catalog/price-book')).PriceBook(gateway.store) as PriceBook,
  };
  await deps.prices.reload();
  const { account } = await createAccount(deps, {
    name: 'Test account',
    plan: 'team',
    providerKey: PROVIDER_KEY,
  });
  const newKey: Stack['newKey'] = async (opts = {}) => {
    const { key, secret } = await createKey(deps, {
      accountId: account.id,
      kind: opts.kind ?? 'live',
      memberId: opts.memberId ?? null,
      app: opts.app ?? null,
      environment: opts.environment ?? null,
      // The stack's keys have no limits; a test that wants the plan's creates its key through the account API.
      planDefaults: false,
    });
    return { id: key.id, secret };
  };
  const first = await newKey({ app: 'test-app', environment: 'ci' });
  const peers: Gateway[] = [];
  const peerDirs: string[] = [];
  return {
    gateway,
    emulator,
    logs,
    account,
    appKey: first.secret,
    keyId: first.id,
    env,
    config,
    schema,
    dataDir,
    deps,
    async seedAccount(opts = {}) {
      const n = randomBase62(6).toLowerCase();
      const created = await createAccount(deps, {
        name: opts.name ?? `Seeded ${n}`,
        plan: opts.plan ?? 'team',
        providerKey: PROVIDER_KEY,
        adminEmail: `admin-${n}@example.com`,
        adminName: `Admin ${n}`,
        ...(opts.trialDays !== undefined ? { trialDays: opts.trialDays } : {}),
      });
      const admin = created.admin!;
      return {
        id: created.account.id,
        adminKey: admin.secret,
        adminKeyId: admin.key.id,
        adminMemberId: admin.member.id,
      };
    },
    async startPeer(peerEnv = {}) {
      // Without TEST_DATABASE_URL, the peer connects to the embedded PostgreSQL the first one runs.
      const peerDir = newDataDir('keygate-peer-');
      peerDirs.push(peerDir);
      const peerConfig = loadConfig({
        PORT: '0',
        KEYGATE_DATA_DIR: peerDir,
        KEYGATE_UPSTREAM_URL: emulator.url,
        KEYGATE_SECRET: config.secret!,
        KEYGATE_OPERATOR_TOKEN: config.operatorToken!,
        KEYGATE_FLUSH_INTERVAL_MS: '10',
        DATABASE_URL: TEST_DATABASE_URL ?? gateway.store.db.url,
        ...env,
        ...peerEnv,
      });
      const peer = await startGateway(peerConfig, { logger, schema, clock });
      peers.push(peer);
      return peer;
    },
    newKey,
    async calls() {
      await gateway.writer.flush();
      return gateway.store.db
        .sql`select * from calls where account_id = ${account.id} order by created_at, id`;
    },
    async close() {
      for (const peer of peers) await peer.close();
      for (const dir of peerDirs) rmSync(dir, { recursive: true, force: true });
      await gateway.close();
      await emulator.close();
      if (TEST_DATABASE_URL) {
        const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
        await sql`drop schema if exists ${sql(schema)} cascade`;
        await sql.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A stack of the file's own with one seeded account, started before its tests and closed after them. */
export function useStackWithAccount(plan: 'solo' | 'team' | 'scale' = 'team'): {
  readonly stack: Stack;
  readonly acct: SeededAccount;
} {
  const held = {} as { stack: Stack; acct: SeededAccount };
  beforeAll(async () => {
    held.stack = await startStack();
    held.acct = await held.stack.seedAccount({ plan });
  });
  afterAll(() => held.stack?.close());
  return held;
}

/**
 * A store of its own, not migrated: a fresh schema of TEST_DATABASE_URL or, without it, a
 * fresh embedded database. `close` drops it.
 */
/** A migrated store of the file's own, opened before its tests and dropped after them. */
export function useTestStore(): { readonly store: WholeStore } {
  const held: { store: WholeStore; close?: () => Promise<void> } = {} as never;
  beforeAll(async () => {
    const { store, close } = await openTestStore();
    held.close = close;
    await migrate(store.db.sql);
    held.store = store;
  });
  afterAll(() => held.close?.());
  return held;
}

export async function openTestStore(): Promise<{ store: WholeStore; close(): Promise<void> }> {
  const dataDir = newDataDir('keygate-store-');
  const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
  const store = createStore(await openDatabase({ url: TEST_DATABASE_URL, dataDir, schema }));
  return {
    store,
    async close() {
      await store.close();
      if (TEST_DATABASE_URL) {
        const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
        await sql`drop schema if exists ${sql(schema)} cascade`;
        await sql.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The flat usage columns a call row must carry, from a provider usage object. */
export function expectedColumns(usage: Record<string, any>) {
  const writes = cacheWrites(usage);
  return {
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_creation_input_tokens: writes.total,
    cache_creation_5m_tokens: writes.fiveMinute,
    cache_creation_1h_tokens: writes.oneHour,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    web_search_requests: usage.server_tool_use?.web_search_requests ?? 0,
  };
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** One JSON request to a gateway; `key` goes as x-api-key (admin keys) unless `bearer` is set. */
export async function api<T = any>(
  base: string,
  path: string,
  opts: {
    key?: string;
    bearer?: string;
    method?: string;
    body?: unknown;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers['x-api-key'] = opts.key;
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, {
    method: opts.method ?? (opts.body !== undefined ? 'POST' : 'GET'),
    headers,
    ...(opts.body !== undefined
      ? { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) }
      : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T, headers: res.headers };
}

/** A minimal model call with an app key. */
export function callModel(base: string, appKey: string, headers: Record<string, string> = {}) {
  return api(base, '/v1/messages', {
    bearer: appKey,
    headers,
    body: { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] },
  });
}

/** A call straight at the provider (the emulator) with the account's provider key: Keygate never sees it. */
export async function callAroundKeygate(stack: Stack, model: string): Promise<Record<string, any>> {
  const res = await api(stack.emulator.url, '/v1/messages', {
    headers: { 'x-api-key': PROVIDER_KEY, 'anthropic-version': '2023-06-01' },
    body: { model, max_tokens: 64, messages: [{ role: 'user', content: 'around' }] },
  });
  if (res.status !== 200) throw new Error(`the provider answered ${res.status}`);
  return res.body.usage;
}

export function pick<T extends Record<string, any>>(row: T, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, row[k]]));
}

export interface ReportFixture {
  acct: SeededAccount;
  other: SeededAccount;
  keyA: string;
  keyB: string;
  member: string;
}

/**
 * An account with two keys (A: a member's live key, B: a test key), and calls at known times
 * in March 2025, plus one call of another account in the same hour.
 */
export async function seedReports(stack: Stack): Promise<ReportFixture> {
  const acct = await stack.seedAccount({ name: 'Reports', trialDays: 0 });
  const other = await stack.seedAccount({ name: 'Someone else' });
  const member = (
    await api(stack.gateway.url, '/v1/organizations/users', {
      key: acct.adminKey,
      body: { email: 'm1@reports.test' },
    })
  ).body.id;
  const keyA = (
    await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { name: 'A', member_id: member, app: 'web' },
    })
  ).body.id;
  const keyB = (
    await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { name: 'B', kind: 'test', app: 'ci' },
    })
  ).body.id;
  const a = { keyId: keyA, memberId: member, app: 'web' };
  await stack.gateway.store.calls.insertBatch([
    callAt(acct.id, '2025-03-10T09:15:00Z', {
      ...a,
      groupId: 'g1',
      usage: {
        input_tokens: 100,
        output_tokens: 50,
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
        cache_read_input_tokens: 30,
        server_tool_use: { web_search_requests: 1 },
      },
    }),
    callAt(acct.id, '2025-03-10T09:45:00Z', {
      ...a,
      model: 'claude-sonnet-4-5',
      usage: { input_tokens: 200, output_tokens: 100 },
    }),
    callAt(acct.id, '2025-03-10T14:05:00Z', {
      keyId: keyB,
      app: 'ci',
      usage: { input_tokens: 1000, output_tokens: 500 },
    }),
    callAt(acct.id, '2025-03-11T00:30:00Z', {
      ...a,
      status: 529,
      errorType: 'overloaded_error',
      usage: { input_tokens: 10, output_tokens: 5 },
    }),
    callAt(other.id, '2025-03-10T09:20:00Z', {
      keyId: other.adminKeyId,
      usage: { input_tokens: 9999, output_tokens: 1 },
    }),
  ]);
  return { acct, other, keyA, keyB, member };
}
