import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, TEST_DATABASE_URL, type Stack } from '../services/gateway/test/harness';
import { main as baseUrlSwitch } from './base-url-switch';
import { main as claudeCode } from './claude-code';
import type { Connection } from './lib/offline';
import { main as pdfSummarize } from './pdf-summarize';
import { main as scannedPdf } from './scanned-pdf';
import { main as streamUsage } from './stream-usage';
import { main as toolLoop } from './tool-loop';

let stack: Stack;
let connection: Connection;
beforeAll(async () => {
  stack = await startStack();
  connection = { baseURL: stack.gateway.url, appKey: stack.appKey, gateway: stack.gateway };
});
afterAll(() => stack?.close());

function output() {
  const lines: string[] = [];
  return { lines, print: (line: string) => void lines.push(line), text: () => lines.join('\n') };
}

const rowsOf = async (groupId: string) => (await stack.calls()).filter((r) => r.group_id === groupId);

describe('each example runs against a real gateway and prints what happened', () => {
  it('base-url-switch: the official SDK with base URL and token, then @keygate/sdk', async () => {
    const out = output();
    const result = await baseUrlSwitch(connection, out.print);
    expect(result.viaOfficial).toMatch(/^Emulated reply to: Hello from the official SDK\./);
    expect(result.viaKeygate).toMatch(/^Emulated reply to: Hello from @keygate\/sdk\./);
    expect(result.total).toMatchObject({ calls: 1, output_tokens: 24 });
    expect(out.lines).toEqual([
      `official SDK  → ${result.viaOfficial}`,
      `@keygate/sdk  → ${result.viaKeygate}`,
      `usage so far  → 1 call, ${result.total.input_tokens} input and 24 output tokens`,
    ]);
  });

  it('stream-usage: the text streams in chunks and the usage record equals what the provider served', async () => {
    const out = output();
    const { chunks, message, record, text } = await streamUsage(connection, out.print);
    expect(chunks).toBeGreaterThan(1);
    const entry = await stack.emulator.ledger.waitFor((e) => e.messageId === message.id, 2_000);
    expect(record.providerUsage).toEqual(entry.usage);
    expect(out.text()).toContain(`streamed ${chunks} text chunks: ${text}`);
    expect(out.text()).toContain(
      `onUsage record       → input ${entry.usage!.input_tokens}, output ${entry.usage!.output_tokens}`,
    );
  });

  it('tool-loop: the weather tool runs, and the group total equals the gateway log', async () => {
    const out = output();
    const result = await toolLoop(connection, out.print);
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ name: 'get_weather', outcome: 'ok', result: '{"celsius":18,"sky":"clear"}' }),
    ]);
    const rows = await rowsOf(result.groupId);
    expect(rows).toHaveLength(result.usage.calls);
    expect(result.usage.input_tokens).toBe(rows.reduce((n, r) => n + r.input_tokens, 0));
    expect(out.lines).toContain('turn 1: stop_reason tool_use');
    expect(out.text()).toContain(`group ${result.groupId}: 2 calls, ${result.usage.input_tokens} input`);
  });

  it('pdf-summarize: 250 pages in three chunks the gateway accepted, then one summary of summaries', async () => {
    const out = output();
    const summary = await pdfSummarize(connection, out.print);
    expect(out.lines[0]).toMatch(/^250 pages, \d+ KiB: The PDF has 250 pages, over the limit of 100\.$/);
    expect(summary.chunks.map((c) => [c.fromPage, c.toPage])).toEqual([
      [1, 100],
      [101, 200],
      [201, 250],
    ]);
    const rows = await rowsOf(summary.groupId);
    expect(rows.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(out.text()).toContain(`usage: 4 calls, ${summary.usage.input_tokens} input`);
  });

  it('scanned-pdf: image-only pages are sent as a document and read', async () => {
    const out = output();
    const { info, message } = await scannedPdf(connection, out.print);
    expect(info).toMatchObject({ pages: 12, fits: true, encrypted: false });
    expect(message.usage.input_tokens).toBeGreaterThan(12 * 1_000);
    expect(out.lines).toContain(
      `input tokens: ${message.usage.input_tokens} (every page is read as an image)`,
    );
  });

  it('claude-code: prints the three variables, and a Claude Code-style session goes through as one group', async () => {
    const out = output();
    const result = await claudeCode(connection, out.print);
    for (const line of [
      `  export ANTHROPIC_BASE_URL=${stack.gateway.url}`,
      `  export ANTHROPIC_AUTH_TOKEN=${stack.appKey}`,
      '  export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
    ]) {
      expect(out.lines).toContain(line);
    }
    expect(result.models).toBeGreaterThan(0);
    const rows = await rowsOf(result.sessionId);
    expect(rows.map((r) => r.endpoint)).toEqual(['models', 'messages']);
    expect(rows[1]).toMatchObject({ stream: true, status: 200, upstream_message_id: result.message.id });
  });
});

describe('one command each', () => {
  it('pnpm --filter @keygate/examples base-url-switch starts its own gateway and runs offline', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, KEYGATE_BASE_URL: '', KEYGATE_APP_KEY: '' };
    if (TEST_DATABASE_URL) env.DATABASE_URL = TEST_DATABASE_URL;
    const { stdout } = await promisify(execFile)(
      'pnpm',
      ['--silent', '--filter', '@keygate/examples', 'base-url-switch'],
      { env, timeout: 90_000 },
    );
    expect(stdout).toMatch(/^\(offline: a Keygate gateway at http:\/\/127\.0\.0\.1:\d+/);
    expect(stdout).toMatch(/official SDK {2}→ Emulated reply to: Hello from the official SDK\./);
    expect(stdout).toMatch(/usage so far {2}→ 1 call, \d+ input and 24 output tokens/);
  }, 120_000);

  it('pnpm --filter @keygate/examples claude-code alone says its gateway stops with it, and prints no address of it', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, KEYGATE_BASE_URL: '', KEYGATE_APP_KEY: '' };
    if (TEST_DATABASE_URL) env.DATABASE_URL = TEST_DATABASE_URL;
    const { stdout } = await promisify(execFile)(
      'pnpm',
      ['--silent', '--filter', '@keygate/examples', 'claude-code'],
      {
        env,
        timeout: 90_000,
      },
    );
    const own = /^\(offline: a Keygate gateway at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
    expect(own).toBeDefined();
    expect(stdout).toContain('stops it when it ends');
    expect(stdout).toContain('export ANTHROPIC_BASE_URL=<your gateway, e.g. http://127.0.0.1:8080>');
    expect(stdout).not.toContain(`=${own}`);
    expect(stdout).not.toMatch(/kg_test_[A-Za-z0-9]{8}/);
    expect(stdout).toMatch(/check: \d+ models listed; a streamed reply of \d+ tokens/);
  }, 120_000);
});
