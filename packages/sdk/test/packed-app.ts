import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

// The SDK as a user gets it: built, packed by pnpm (publishConfig applied), installed by npm
// into an app outside the workspace, then run by each runtime as a separate process.

const ROOT = resolve(import.meta.dirname, '../../..');
const execFileAsync = promisify(execFile);

/** The @anthropic-ai/sdk versions the peer range is tested at: the floor, then the newest. */
export const PEER_VERSIONS = ['1.11.0', '1.12.0'] as const;

/** Builds and packs @keygate/sdk; returns the tarball's path. */
export function packSdk(into: string): string {
  execFileSync('pnpm', ['--filter', '@keygate/sdk', 'build'], { cwd: ROOT, stdio: 'ignore' });
  execFileSync('pnpm', ['--filter', '@keygate/sdk', 'pack', '--pack-destination', into], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  const tarball = readdirSync(into).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`pnpm pack wrote no tarball into ${into}`);
  return join(into, tarball);
}

/** A fresh app in the system temp folder with the tarball and the official SDK installed by npm. */
export function installApp(tarball: string, peerVersion: string): string {
  const app = mkdtempSync(join(tmpdir(), 'keygate-app-'));
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'fresh-app', private: true, type: 'module' }),
  );
  npmInstall(app, [tarball, `@anthropic-ai/sdk@${peerVersion}`]);
  writeConsumers(app);
  return app;
}

/** A copy of an installed app with another version of the official SDK. */
export function withPeerVersion(app: string, peerVersion: string): string {
  const copy = mkdtempSync(join(tmpdir(), 'keygate-app-'));
  cpSync(app, copy, { recursive: true });
  npmInstall(copy, [`@anthropic-ai/sdk@${peerVersion}`]);
  return copy;
}

function npmInstall(app: string, specs: string[]): void {
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--loglevel=error', '--prefer-offline', ...specs],
    { cwd: app, stdio: ['ignore', 'ignore', 'pipe'] },
  );
}

// One body for every consumer: valid JavaScript and valid TypeScript (types come from the SDK).
const BODY = `
const records = new Array(0);
const client = new Keygate({ onUsage: (record) => { records.push(record); } });
const model = 'claude-opus-4-5';
const created = await client.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Hello from a packed install' }] });
const streamed = await client.messages.stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Stream from a packed install' }] }).finalMessage();
const bytes = new Uint8Array(await makeTestPdf({ pages: 3 }));
const info = await pdf.inspect(bytes);
const chunks = await pdf.split(bytes, { maxPages: 2 });
const block = pdf.documentBlock(chunks[0].bytes, { title: 'Pages 1 to 2' });
const withPdf = await client.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: [block, { type: 'text', text: 'Summarize.' }] }] });
const data = block.source.type === 'base64' ? block.source.data : '';
console.log(JSON.stringify({
  ids: [created.id, streamed.id, withPdf.id],
  records,
  info,
  chunks: chunks.map((c) => [c.fromPage, c.toPage, Object.getPrototypeOf(c.bytes) === Uint8Array.prototype]),
  pdfHeader: atob(data).slice(0, 5),
  sameDefault: Keygate === KeygateNamed,
}));
`;

const CONSUMERS: Record<string, string> = {
  'consumer.mjs': `import Keygate, { Keygate as KeygateNamed, pdf } from '@keygate/sdk';
import { makeTestPdf } from '@keygate/sdk/testing';
${BODY}`,
  'consumer.cjs': `const Keygate = require('@keygate/sdk').default;
const { Keygate: KeygateNamed, pdf } = require('@keygate/sdk');
const { makeTestPdf } = require('@keygate/sdk/testing');
(async () => {${BODY}})().catch((error) => { console.error(error); process.exitCode = 1; });
`,
  'consumer.ts': `import Keygate, { Anthropic, Keygate as KeygateNamed, pdf, type UsageRecord } from '@keygate/sdk';
import { makeTestPdf } from '@keygate/sdk/testing';
${BODY}
// Compiled, never run: the declarations are real types, not any.
export function typesHold(client: Keygate, record: UsageRecord): number {
  const official: Anthropic = client;
  // @ts-expect-error onUsage takes a function
  new Keygate({ onUsage: 42 });
  return record.usage?.output_tokens ?? official.maxRetries;
}
`,
  // CommonJS declarations (.d.cts), checked under node16 only: bundler resolution has no require.
  'consumer-types.cts': `import sdk = require('@keygate/sdk');
import testing = require('@keygate/sdk/testing');
export const client: sdk.Anthropic = new sdk.Keygate({ appKey: 'kg_live_x', onUsage: (r: sdk.UsageRecord) => r.latencyMs });
export const made: Promise<Uint8Array> = testing.makeTestPdf({ pages: 1 });
// @ts-expect-error onUsage takes a function
new sdk.default({ onUsage: 42 });
`,
};

const TSCONFIG_BASE = {
  strict: true,
  noEmit: true,
  target: 'es2022',
  lib: ['es2022', 'dom', 'dom.iterable'],
  types: [],
  skipLibCheck: true,
};

function writeConsumers(app: string): void {
  for (const [file, source] of Object.entries(CONSUMERS)) writeFileSync(join(app, file), source);
  const tsconfig = (options: object, files: string[]) =>
    JSON.stringify({ compilerOptions: { ...TSCONFIG_BASE, ...options }, files }, null, 2);
  writeFileSync(
    join(app, 'tsconfig.node16.json'),
    tsconfig({ module: 'node16', moduleResolution: 'node16' }, ['consumer.ts', 'consumer-types.cts']),
  );
  writeFileSync(
    join(app, 'tsconfig.bundler.json'),
    tsconfig({ module: 'esnext', moduleResolution: 'bundler' }, ['consumer.ts']),
  );
}

/** tsc (the workspace's) on one of the app's configs; resolves with its output, rejects on a type error. */
export async function typecheck(app: string, config: 'node16' | 'bundler'): Promise<string> {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const { stdout } = await execFileAsync(
    process.execPath,
    [tsc, '-p', join(app, `tsconfig.${config}.json`)],
    { cwd: app },
  );
  return stdout;
}

export type Runtime = 'node20' | 'node24' | 'bun' | 'deno';

/** Runs a consumer file of the app under a runtime against a gateway; returns what it printed. */
export async function runConsumer(
  app: string,
  runtime: Runtime,
  bin: string,
  file: string,
  env: Record<string, string>,
): Promise<any> {
  const args = runtime === 'deno' ? ['run', '-A', file] : [file];
  const { stdout } = await execFileAsync(bin, args, {
    cwd: app,
    timeout: 30_000,
    // No proxy between the consumer and the loopback gateway; no update checks leave the machine.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? app,
      NO_PROXY: '*',
      DENO_NO_UPDATE_CHECK: '1',
      ...env,
    },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null');
}
