import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { TEST_DATABASE_URL, type Stack } from './harness';
import { COMPILED } from './compiled-gateway';

const BIN = join(import.meta.dirname, '../bin/keygate.js');
export const OPERATOR_TOKEN = 'operator-token-0123456789';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export type Cli = ((args: string[], extra?: NodeJS.ProcessEnv, input?: string) => Promise<Run>) & {
  /** Runs with --json, expects exit 0 and exactly one JSON value on stdout, and returns it. */
  json(args: string[], extra?: NodeJS.ProcessEnv): Promise<any>;
};

/**
 * The CLI as a script runs it: a child process; never throws on a non-zero exit. With
 * TEST_DATABASE_URL it opens the stack's schema itself; on the embedded database it finds the
 * running gateway in the data dir and goes through its operator API.
 */
export function cliFor(stack: Stack): Cli {
  const {
    DATABASE_URL: _d,
    KEYGATE_SECRET: _s,
    KEYGATE_OPERATOR_TOKEN: _t,
    KEYGATE_URL: _u,
    ...rest
  } = process.env;
  const env = {
    ...rest,
    KEYGATE_LOG_LEVEL: 'warn',
    ...(TEST_DATABASE_URL || COMPILED
      ? {
          DATABASE_URL: stack.gateway.store.db.url,
          KEYGATE_DB_SCHEMA: stack.schema,
          KEYGATE_SECRET: stack.config.secret!,
        }
      : { KEYGATE_DATA_DIR: stack.dataDir, KEYGATE_OPERATOR_TOKEN: stack.config.operatorToken! }),
  };
  const run = (args: string[], extra: NodeJS.ProcessEnv = {}, input?: string) =>
    new Promise<Run>((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN, ...args],
        { env: { ...env, ...extra }, timeout: 60_000 },
        (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
      // What the command reads on stdin (a secret piped in); otherwise stdin ends at once.
      child.stdin?.end(input ?? '');
    });
  return Object.assign(run, {
    async json(args: string[], extra: NodeJS.ProcessEnv = {}) {
      const out = await run([...args, '--json'], extra);
      expect(out.code, out.stderr).toBe(0);
      return JSON.parse(out.stdout);
    },
  });
}

/** One CLI run against a stack (see cliFor). */
export function runKeygate(stack: Stack, args: string[]): Promise<Run> {
  return cliFor(stack)(args);
}
