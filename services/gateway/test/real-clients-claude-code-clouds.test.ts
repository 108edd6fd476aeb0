import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, freshHome, killClaudeRuns, runClaude } from './claude-code';
import { startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

/**
 * Real Claude Code in Bedrock and Vertex AI mode, pointed at Keygate's cloud fronts as
 * docs/claude-code/bedrock-and-vertex.md says: each of its calls is served through the messages
 * pipeline and recorded under the provider's model id.
 */
let stack: Stack;
let root: string;
let blackholePort: number;

beforeAll(async () => {
  stack = await startStack();
  blackholePort = await closedPort();
  root = mkdtempSync(join(tmpdir(), 'keygate-claude-clouds-'));
}, 60_000);
afterEach(killClaudeRuns);
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  await stack?.close();
});

const MODELS = {
  bedrock: ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'anthropic.claude-haiku-4-5-20251001-v1:0'],
  vertex: ['claude-sonnet-4-5@20250929', 'claude-haiku-4-5@20251001'],
};

async function run(name: string) {
  const key = await stack.newKey({ app: name });
  const home = join(root, name);
  freshHome(home);
  const result = await runClaude({
    home,
    prompt: 'Say hello to the gateway',
    sessionId: randomUUID(),
    env: { ...envFor(name, key.secret), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
    blackholePort,
    timeoutMs: 90_000,
  });
  return { ...result, keyId: key.id };
}

function envFor(name: string, secret: string): Record<string, string> {
  const base = stack.gateway.url;
  const [main, small] = name === 'bedrock' ? MODELS.bedrock : MODELS.vertex;
  const models = {
    ANTHROPIC_MODEL: main!,
    ANTHROPIC_SMALL_FAST_MODEL: small!,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: small!,
  };
  if (name === 'bedrock')
    return {
      CLAUDE_CODE_USE_BEDROCK: '1',
      ANTHROPIC_BEDROCK_BASE_URL: `${base}/bedrock`,
      AWS_BEARER_TOKEN_BEDROCK: secret,
      AWS_REGION: 'us-east-1',
      ...models,
    };
  return {
    CLAUDE_CODE_USE_VERTEX: '1',
    ANTHROPIC_VERTEX_BASE_URL: `${base}/vertex/v1`,
    CLAUDE_CODE_SKIP_VERTEX_AUTH: '1',
    ANTHROPIC_CUSTOM_HEADERS: `x-api-key: ${secret}`,
    ANTHROPIC_VERTEX_PROJECT_ID: 'team-project',
    CLOUD_ML_REGION: 'us-east5',
    ...models,
  };
}

describe('real Claude Code through the cloud fronts', () => {
  it.each(['bedrock', 'vertex'])(
    '%s mode: answered, every call recorded under its key',
    { timeout: 120_000 },
    async (name) => {
      const r = await run(name);
      expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
      expect(r.stdout.trim().length).toBeGreaterThan(0);
      const calls = await waitFor(
        async () => {
          const rows = (await stack.calls()).filter((c) => c.key_id === r.keyId);
          return rows.length > 0 && rows;
        },
        { timeout: 5_000, what: `the calls of the ${name} run` },
      );
      // Every call under the provider's id (Claude Code also asks for models of its own choosing,
      // in the cloud's spelling); the session's answer came from the model it was given.
      for (const c of calls) {
        expect(c.status).toBe(200);
        expect(c.model).toMatch(/^claude-[a-z0-9]+(-[a-z0-9]+)*$/);
        expect(c.model).not.toMatch(/anthropic\.|@|-v\d+:\d+$/);
        expect(Number(c.output_tokens)).toBeGreaterThan(0);
      }
      expect(calls.map((c) => c.model)).toContain('claude-sonnet-4-5-20250929');
    },
  );
});
