import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM script without types
import { ensureTools } from '../../../scripts/ensure-tools.mjs';
import { normalizeUsage } from '../src/index';
import { startStack, type Stack } from './helpers';
import {
  installApp,
  packSdk,
  PEER_VERSIONS,
  runConsumer,
  typecheck,
  withPeerVersion,
  type Runtime,
} from './packed-app';

// The packed SDK in a fresh app outside the workspace, on every runtime the issue names, against
// a real gateway. One build, one pack and one npm install serve every consumer.
const tools = ensureTools(['node24', 'bun', 'deno']) as Record<string, string>;
const RUNTIMES: Record<Runtime, string> = {
  node20: process.execPath,
  node24: tools.node24!,
  bun: tools.bun!,
  deno: tools.deno!,
};

let stack: Stack;
let scratch: string;
let app: string;
const apps: string[] = [];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'keygate-pack-'));
  const tarball = packSdk(scratch);
  app = installApp(tarball, PEER_VERSIONS[0]);
  apps.push(app);
  stack = await startStack();
}, 240_000);

afterAll(async () => {
  await stack?.close();
  for (const dir of [scratch, ...apps]) if (dir) rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ KEYGATE_APP_KEY: stack.appKey, KEYGATE_BASE_URL: stack.gateway.url });

/** What every consumer must have seen: three real calls, each reported once with the provider's usage. */
async function expectConsumerResult(result: any): Promise<void> {
  expect(result.sameDefault).toBe(true);
  expect(result.records).toHaveLength(3);
  expect(result.records.map((r: any) => r.messageId)).toEqual(result.ids);
  expect(result.records.map((r: any) => r.stream)).toEqual([false, true, false]);
  for (const record of result.records) {
    const entry = await stack.emulator.ledger.waitFor((e) => e.messageId === record.messageId, 2_000);
    expect(record).toMatchObject({
      status: 200,
      errorType: null,
      model: 'claude-opus-4-5',
      providerUsage: entry.usage,
    });
    expect(record.usage).toEqual(normalizeUsage(entry.usage as never));
    expect(record.usage.output_tokens).toBeGreaterThan(0);
  }
  expect(result.info).toMatchObject({ isPdf: true, pages: 3, encrypted: false, fits: true });
  expect(result.chunks).toEqual([
    [1, 2, true],
    [3, 3, true],
  ]);
  expect(result.pdfHeader).toBe('%PDF-');
}

describe(`the packed SDK installed by npm with @anthropic-ai/sdk ${PEER_VERSIONS[0]}`, () => {
  const cases: Array<[Runtime, string]> = [
    ['node20', 'consumer.mjs'],
    ['node20', 'consumer.cjs'],
    ['node24', 'consumer.mjs'],
    ['node24', 'consumer.cjs'],
    ['node24', 'consumer.ts'],
    ['bun', 'consumer.mjs'],
    ['bun', 'consumer.cjs'],
    ['bun', 'consumer.ts'],
    ['deno', 'consumer.mjs'],
    ['deno', 'consumer.cjs'],
    ['deno', 'consumer.ts'],
  ];
  it.each(cases)(
    '%s runs %s: create, stream, onUsage and the PDF helpers on a Uint8Array',
    async (runtime, file) => {
      await expectConsumerResult(await runConsumer(app, runtime, RUNTIMES[runtime], file, env()));
    },
  );

  it.each(['node16', 'bundler'] as const)(
    'a TypeScript app type-checks with moduleResolution %s',
    async (resolution) => {
      await expect(typecheck(app, resolution)).resolves.toBe('');
    },
    90_000,
  );
});

describe(`the same install with @anthropic-ai/sdk ${PEER_VERSIONS[1]}, the newest tested`, () => {
  let newer: string;
  beforeAll(() => {
    newer = withPeerVersion(app, PEER_VERSIONS[1]);
    apps.push(newer);
  }, 120_000);

  it.each(['consumer.mjs', 'consumer.cjs'])('node20 runs %s', async (file) => {
    await expectConsumerResult(await runConsumer(newer, 'node20', RUNTIMES.node20, file, env()));
  });

  it('type-checks with moduleResolution node16', async () => {
    await expect(typecheck(newer, 'node16')).resolves.toBe('');
  }, 90_000);
});
