import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../src/config';
import type { Gateway } from '../src/server';
import { createStore } from '../src/stores';
import { openDatabase } from '../src/store';
import { newDataDir } from './data-dir';

/**
 * KEYGATE_TEST_GATEWAY=compiled runs the suites that opt in (vitest's `compiled` project)
 * against the gateway as users run it: `pnpm build` once (the project's global setup), then
 * `node services/gateway/bin/keygate.js serve` in a child process per stack.
 */
export const COMPILED = process.env.KEYGATE_TEST_GATEWAY === 'compiled';

const BIN = join(import.meta.dirname, '../bin/keygate.js');

/** What a test may ask of a gateway in another process; anything else throws, naming the field. */
type CompiledGateway = Pick<Gateway, 'url' | 'port' | 'config' | 'store' | 'operatorToken' | 'close'> & {
  writer: Pick<Gateway['writer'], 'flush'>;
};

/**
 * `keygate serve` from the build, configured by `env` as the in-process gateway is by `config`,
 * on `databaseUrl` in `schema`; the test process holds its own connections to that schema.
 * Every log line goes to `logs`. Resolves once the gateway says where it listens.
 */
export async function spawnCompiledGateway(opts: {
  config: Config;
  env: Record<string, string>;
  schema: string;
  databaseUrl: string | null;
  logs: string[];
}): Promise<Gateway> {
  const { config, schema, logs } = opts;
  // Without TEST_DATABASE_URL the test starts the embedded database and lends it to the child.
  const dbDir = opts.databaseUrl ? null : newDataDir('keygate-compiled-db-');
  const store = createStore(await openDatabase({ url: opts.databaseUrl, dataDir: dbDir ?? '', schema }));
  const {
    DATABASE_URL: _d,
    KEYGATE_URL: _u,
    KEYGATE_DB_SCHEMA: _s,
    KEYGATE_TEST_GATEWAY: _t,
    ...inherited
  } = process.env;
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      ...inherited,
      HOST: '127.0.0.1',
      PORT: '0',
      KEYGATE_LOG_LEVEL: 'debug',
      KEYGATE_WORKERS: '1',
      ...opts.env,
      DATABASE_URL: store.db.url,
      KEYGATE_DB_SCHEMA: schema,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let partial = '';
  const listening = new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        logs.push(line);
        if (line.includes('"keygate listening"')) resolve(JSON.parse(line).url);
      }
    });
    void exited.then(() =>
      reject(new Error(`the compiled gateway exited (${child.exitCode}):\n${logs.join('\n')}${partial}`)),
    );
  });
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await store.close();
    if (dbDir) rmSync(dbDir, { recursive: true, force: true });
  };
  let url: string;
  try {
    url = await listening;
  } catch (err) {
    await close();
    throw err;
  }
  const gateway: CompiledGateway = {
    url,
    port: Number(new URL(url).port),
    config,
    store,
    operatorToken: config.operatorToken ?? '',
    // The gateway's readiness report counts the call records not yet committed.
    writer: { flush: () => callLogWritten(url, config.operatorToken ?? '') },
    close,
  };
  return new Proxy(gateway, {
    get(target, name) {
      if (name in target || typeof name === 'symbol' || name === 'then') return Reflect.get(target, name);
      throw new Error(
        `gateway.${name} lives in the gateway's process: not available with KEYGATE_TEST_GATEWAY=compiled`,
      );
    },
  }) as unknown as Gateway;
}

/** Waits until the gateway reports no call record waiting for PostgreSQL (the details need the operator token). */
async function callLogWritten(url: string, operatorToken: string): Promise<void> {
  for (;;) {
    const res = await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${operatorToken}` } });
    const report = (await res.json()) as { checks: { call_log?: { queued: number } } };
    // No call_log check: the call log is off, nothing to wait for.
    if ((report.checks.call_log?.queued ?? 0) === 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
