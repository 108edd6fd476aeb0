import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A secret kept in the data dir (embedded mode), created on first use with owner-only permissions. */
export function persistentSecret(dataDir: string, name: string): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, value + '\n', { mode: 0o600, flag: 'wx' });
  return value;
}

export interface RunningGateway {
  pid: number;
  url: string;
}

const RUNTIME_FILE = 'gateway.json';

/** Tells the CLI a gateway owns the embedded database, so it goes through its operator API. */
export function announceGateway(dataDir: string, info: RunningGateway): () => void {
  const file = join(dataDir, RUNTIME_FILE);
  writeFileSync(file, JSON.stringify(info) + '\n', { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

export function runningGateway(dataDir: string): RunningGateway | null {
  const file = join(dataDir, RUNTIME_FILE);
  if (!existsSync(file)) return null;
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as RunningGateway;
    process.kill(info.pid, 0);
    return info;
  } catch {
    return null;
  }
}
