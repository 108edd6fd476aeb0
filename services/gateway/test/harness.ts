import { startEmulator, type Emulator } from '@keygate/emulator';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createAccount, createKey } from '../src/admin/service';
import { loadConfig } from '../src/config';
import { randomBase62 } from '../src/lib/ids';
import { createLogger } from '../src/lib/logger';
import { startGateway, type Gateway } from '../src/server';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? null;
export const PROVIDER_KEY = `sk-ant-api03-${randomBase62(40)}`;

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
  newKey(opts?: { kind?: 'live' | 'test' | 'admin'; memberId?: string; app?: string; environment?: string }): Promise<{ id: string; secret: string }>;
  /** Waits until the call log holds the gateway's queued records, then returns them. */
  calls(): Promise<Record<string, any>[]>;
  close(): Promise<void>;
}

/**
 * A real gateway on loopback, with the emulator as the provider and a fresh account. It uses
 * TEST_DATABASE_URL (each stack in its own schema) or, without it, the embedded database.
 */
export async function startStack(env: Record<string, string> = {}): Promise<Stack> {
  const emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
  const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'keygate-test-'));
  const config = loadConfig({
    PORT: '0',
    KEYGATE_DATA_DIR: dataDir,
    KEYGATE_UPSTREAM_URL: emulator.url,
    KEYGATE_SECRET: 'test-secret-0123456789abcdef',
    KEYGATE_OPERATOR_TOKEN: 'operator-token-0123456789',
    KEYGATE_FLUSH_INTERVAL_MS: '10',
    ...(TEST_DATABASE_URL ? { DATABASE_URL: TEST_DATABASE_URL } : {}),
    ...env,
  });
  const logs: string[] = [];
  const logger = createLogger('debug', (line) => logs.push(line));
  const gateway = await startGateway(config, { logger, schema });
  const deps = { store: gateway.store, box: new (await import('../src/lib/secret-box')).SecretBox(config.secret!), clock: Date.now };
  const { account } = await createAccount(deps, { name: 'Test account', plan: 'team', providerKey: PROVIDER_KEY });
  const newKey: Stack['newKey'] = async (opts = {}) => {
    const { key, secret } = await createKey(deps, { accountId: account.id, kind: opts.kind ?? 'live', memberId: opts.memberId ?? null, app: opts.app ?? null, environment: opts.environment ?? null });
    return { id: key.id, secret };
  };
  const first = await newKey({ app: 'test-app', environment: 'ci' });
  return {
    gateway,
    emulator,
    logs,
    account,
    appKey: first.secret,
    keyId: first.id,
    env,
    newKey,
    async calls() {
      await gateway.writer.flush();
      return gateway.store.db.sql`select * from calls where account_id = ${account.id} order by created_at, id`;
    },
    async close() {
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

/** The flat usage columns a call row must carry, from a provider usage object. */
export function expectedColumns(usage: Record<string, any>) {
  const c1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return {
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
    cache_creation_5m_tokens: usage.cache_creation?.ephemeral_5m_input_tokens ?? (usage.cache_creation_input_tokens ?? 0) - c1h,
    cache_creation_1h_tokens: c1h,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    web_search_requests: usage.server_tool_use?.web_search_requests ?? 0,
  };
}

export function pick<T extends Record<string, any>>(row: T, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, row[k]]));
}
