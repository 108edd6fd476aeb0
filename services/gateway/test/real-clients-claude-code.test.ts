import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, freshHome, killClaudeRuns, runClaude } from './claude-code';
import { PROVIDER_KEY } from './harness';
import {
  captured,
  emulatorReplyText,
  expectSameProviderRequests,
  expectUsageMatchesLedger,
  useClientStacks,
} from './real-clients';

const ctx = useClientStacks();
let root: string;
let blackholePort: number;

beforeAll(async () => {
  blackholePort = await closedPort();
  root = mkdtempSync(join(tmpdir(), 'keygate-claude-'));
});
afterEach(killClaudeRuns);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PROMPT = 'Say hello to the gateway';

/** Claude Code from a fresh home, quiet, for a call the gateway is to refuse; `before`: the provider's requests until then. */
async function refusedRun(name: string, env: Record<string, string>) {
  const home = join(root, name);
  freshHome(home);
  const before = ctx.stack.emulator.ledger.entries.length;
  const run = await runClaude({
    home,
    prompt: PROMPT,
    sessionId: randomUUID(),
    env: { ...env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
    blackholePort,
  });
  return { ...run, before };
}

interface Case {
  name: string;
  keyKind: 'live' | 'test';
  credential: 'ANTHROPIC_AUTH_TOKEN' | 'ANTHROPIC_API_KEY';
  quiet: boolean;
}

const CASES: Case[] = [
  {
    name: 'kg_live_ key as Bearer (ANTHROPIC_AUTH_TOKEN), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
    keyKind: 'live',
    credential: 'ANTHROPIC_AUTH_TOKEN',
    quiet: true,
  },
  {
    name: 'kg_live_ key as x-api-key (ANTHROPIC_API_KEY)',
    keyKind: 'live',
    credential: 'ANTHROPIC_API_KEY',
    quiet: false,
  },
  {
    name: "kg_test_ key, answered by the gateway's built-in emulator",
    keyKind: 'test',
    credential: 'ANTHROPIC_AUTH_TOKEN',
    quiet: false,
  },
];

/**
 * Claude Code run twice from the same fresh home, once straight at an emulator and once through
 * the gateway. Nothing is normalised: the session id is pinned with --session-id, the device id
 * in metadata.user_id is seeded (see freshHome), and the working directory in the system prompt
 * is the same path; the date in the system prompt could only differ across midnight.
 */
describe('Claude Code through a real gateway, unchanged', () => {
  it.each(CASES)('$name', { timeout: 120_000 }, async (c) => {
    const { stack, direct } = ctx;
    const home = join(root, `home-${c.keyKind}-${c.credential}`);
    const sessionId = randomUUID();
    const key =
      c.keyKind === 'live'
        ? { id: stack.keyId, secret: stack.appKey }
        : await stack.newKey({ kind: 'test', app: 'claude-code' });
    const provider = c.keyKind === 'live' ? stack.emulator : stack.gateway.emulator;
    const claude = (baseUrl: string, credential: string) => {
      freshHome(home);
      const env: Record<string, string> = { ANTHROPIC_BASE_URL: baseUrl, [c.credential]: credential };
      if (c.quiet) env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = '1';
      return runClaude({ home, prompt: PROMPT, sessionId, env, blackholePort });
    };

    const straight = await captured(direct, () => claude(direct.url, PROVIDER_KEY));
    expect(straight.result.code, straight.result.stdout + straight.result.stderr).toBe(0);
    const through = await captured(provider, () => claude(stack.gateway.url, key.secret));
    expect(through.result.code, through.result.stdout + through.result.stderr).toBe(0);

    const reply = await emulatorReplyText(direct, straight.requests.at(-1)!);
    expect(reply).toMatch(/^Emulated reply to: /);
    expect(through.result.stdout.trim()).toBe(reply.trim());
    expect(through.result.stdout).toBe(straight.result.stdout);

    expectSameProviderRequests(straight.requests, through.requests);
    for (const r of through.requests) {
      expect(r.headers['x-api-key']).toBe(provider.apiKey);
      expect(r.headers.authorization).toBeUndefined();
      expect(r.headers['x-claude-code-session-id']).toBe(sessionId);
    }

    const rows = await expectUsageMatchesLedger(stack, provider, through.requests);
    expect(rows.map((r) => [r.group_id, r.key_id, r.status])).toEqual(
      rows.map(() => [sessionId, key.id, 200]),
    );
    // No call of the session stopped at the gateway (a refusal would be a row without a provider request).
    const session = (await stack.calls()).filter((r) => r.group_id === sessionId);
    expect(session.map((r) => r.id).sort()).toEqual(rows.map((r) => r.id).sort());
  });

  it("the README's settings.json: the base URL in its env block, the key from apiKeyHelper", {
    timeout: 120_000,
  }, async () => {
    const { stack } = ctx;
    const home = join(root, 'home-settings');
    freshHome(home);
    const key = await stack.newKey({ app: 'claude-code', environment: 'laptop' });
    const keyFile = join(home, 'keygate-key');
    writeFileSync(keyFile, `${key.secret}\n`, { mode: 0o600 });
    mkdirSync(join(home, '.claude'));
    writeFileSync(
      join(home, '.claude/settings.json'),
      JSON.stringify({
        env: { ANTHROPIC_BASE_URL: stack.gateway.url, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
        apiKeyHelper: `cat ${keyFile}`,
      }),
    );
    const sessionId = randomUUID();
    // Nothing in the environment: everything comes from the settings file.
    const run = await runClaude({ home, prompt: PROMPT, sessionId, env: {}, blackholePort });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Emulated reply to: /);
    const session = (await stack.calls()).filter((r) => r.group_id === sessionId);
    expect(session.length).toBeGreaterThan(0);
    expect(session.map((r) => [r.key_id, r.status])).toEqual(session.map(() => [key.id, 200]));
  });

  it('a base URL ending in /v1 is answered with a message Claude Code shows, saying how to fix it', {
    timeout: 60_000,
  }, async () => {
    const { stack } = ctx;
    const run = await refusedRun('home-doubled-v1', {
      ANTHROPIC_BASE_URL: `${stack.gateway.url}/v1`,
      ANTHROPIC_AUTH_TOKEN: stack.appKey,
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/API Error: 400 .*the base URL ends in \/v1.*without \/v1/);
    expect(run.stdout).not.toMatch(/issue with the selected model/);
    expect(stack.emulator.ledger.entries.length).toBe(run.before);
  });

  it('a provider key in ANTHROPIC_API_KEY is refused with the 401 that says what to send, and nothing reaches the provider', {
    timeout: 60_000,
  }, async () => {
    const { stack } = ctx;
    const run = await refusedRun('home-provider-key', {
      ANTHROPIC_BASE_URL: stack.gateway.url,
      ANTHROPIC_API_KEY: PROVIDER_KEY,
      // Claude Code retries a 401 with a backoff of its own that outlasts any test; one try is enough here.
      CLAUDE_CODE_MAX_RETRIES: '0',
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /API Error: 401 This is an Anthropic API key\. Keygate never takes provider keys from clients/,
    );
    expect(run.stdout + run.stderr).not.toContain(PROVIDER_KEY);
    expect(stack.emulator.ledger.entries.length).toBe(run.before);

    const res = await fetch(`${stack.gateway.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'x-api-key': PROVIDER_KEY,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { type: string; message: string }; request_id: string };
    expect(body.error.type).toBe('authentication_error');
    expect(body.error.message).toMatch(/This is an Anthropic API key.*Bearer kg_live_/);
    expect(res.headers.get('request-id')).toBe(body.request_id);
  });
});
