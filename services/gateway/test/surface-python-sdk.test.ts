import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM script without types
import { ensurePythonAnthropic } from '../../../scripts/ensure-tools.mjs';
import { PROVIDER_KEY } from './harness';
import { startSurfaceStack, type SurfaceStack } from './surface-kit';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./python/files_batches.py', import.meta.url));

/** The official Python SDK (`anthropic` 1.13, in its own virtual environment under .cache/tools). */
describe("the official Python SDK's files and batches methods", () => {
  let s: SurfaceStack;
  let python: string;
  beforeAll(async () => {
    python = ensurePythonAnthropic() as string;
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  const drive = async (baseUrl: string, key: string) => {
    const { stdout } = await run(python, [SCRIPT], {
      env: { PATH: process.env.PATH ?? '', BASE_URL: baseUrl, API_KEY: key, NO_PROXY: '127.0.0.1' },
      timeout: 60_000,
    });
    return JSON.parse(stdout) as Record<string, unknown>;
  };

  it('give the same results through the gateway as straight at the emulator', {
    timeout: 90_000,
  }, async () => {
    const [through, straight] = await Promise.all([
      drive(s.stack.gateway.url, s.alice.key),
      drive(s.stack.emulator.url, PROVIDER_KEY),
    ]);
    expect(through).toEqual(straight);
    expect(through).toMatchObject({
      metadata_same: true,
      listed: true,
      download_same: true,
      delete: 'file_deleted',
      after_delete: 404,
      results_url_host: true,
      listed_batch: true,
      deleted: 'message_batch_deleted',
      canceled: 'canceling',
    });
    expect(through.results).toHaveLength(2);
  });
});
