/**
 * Claude Code through Keygate: three environment variables. This prints them for your gateway
 * and key, then makes the kind of call Claude Code makes (streaming, `?beta=true`, its session
 * id), configured from nothing but those variables, to show the gateway takes it.
 *
 * Run: pnpm --filter @keygate/examples claude-code
 */
import Anthropic from '@anthropic-ai/sdk';
import { randomUUID } from 'node:crypto';
import { isMain, runExample, type Connection, type Print } from './lib/offline';

export function claudeCodeEnv({ baseURL, appKey }: Connection): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: baseURL,
    ANTHROPIC_AUTH_TOKEN: appKey,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}

/** What to put in place of a gateway that stops with this example. */
const YOURS: Connection = {
  baseURL: '<your gateway, e.g. http://127.0.0.1:8080>',
  appKey: '<your kg_live_ key>',
};

export async function main(connection: Connection, print: Print) {
  const env = claudeCodeEnv(connection);
  if (connection.throwaway)
    print(
      [
        'This example started a gateway of its own for this run, and stops it when it ends: its address',
        'and key are of no use to Claude Code afterwards. For a gateway that stays up, run `pnpm start`,',
        'make a key (`keygate key create --account ACCOUNT`), and run this example again with',
        'KEYGATE_BASE_URL and KEYGATE_APP_KEY set: it then prints the settings for that gateway.\n',
      ].join('\n'),
    );
  const shown = claudeCodeEnv(connection.throwaway ? YOURS : connection);
  print('Point Claude Code at Keygate, in your shell:\n');
  for (const [name, value] of Object.entries(shown)) print(`  export ${name}=${value}`);
  print('  claude\n');
  print('or for every session, in ~/.claude/settings.json:\n');
  print(JSON.stringify({ env: shown }, null, 2).replace(/^/gm, '  '));
  print(
    '\nANTHROPIC_AUTH_TOKEN is sent as `Authorization: Bearer`; leave ANTHROPIC_API_KEY unset. The gateway',
  );
  print('groups each Claude Code session by its x-claude-code-session-id.\n');

  // What Claude Code sends, from the variables alone.
  const sessionId = randomUUID();
  const client = new Anthropic({
    baseURL: env.ANTHROPIC_BASE_URL,
    authToken: env.ANTHROPIC_AUTH_TOKEN,
    apiKey: null,
  });
  const headers = { 'x-claude-code-session-id': sessionId };
  const models = await client.models.list({ limit: 1000 }, { headers });
  const message = await client.beta.messages
    .stream(
      {
        model: 'claude-sonnet-4-6',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'List the files you would read first.' }],
      },
      { headers },
    )
    .finalMessage();
  print(
    `check: ${models.data.length} models listed; a streamed reply of ${message.usage.output_tokens} tokens in session ${sessionId}`,
  );
  return { env, sessionId, models: models.data.length, message };
}

if (isMain(import.meta.url)) await runExample(main);
