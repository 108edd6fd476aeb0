/**
 * Switching an existing app to Keygate.
 *
 * 1. Nothing but configuration: the official SDK, given the gateway's URL and an app key.
 * 2. The two-line switch to @keygate/sdk, which adds usage tracking and the helpers.
 *
 * Run: pnpm --filter @keygate/examples base-url-switch
 */
import Anthropic from '@anthropic-ai/sdk';
import Keygate from '@keygate/sdk';
import { isMain, runExample, type Connection, type Print } from './lib/offline';

const MODEL = 'claude-sonnet-4-6';

/** App code written for the official SDK. It does not change. */
async function answer(client: Anthropic, question: string): Promise<string> {
  const message = await client.messages.create({
    model: MODEL,
    max_tokens: 200,
    messages: [{ role: 'user', content: question }],
  });
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

export async function main({ baseURL, appKey }: Connection, print: Print) {
  // Switch 1: base URL and token only (as ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN would).
  const official = new Anthropic({ baseURL, authToken: appKey, apiKey: null });
  const viaOfficial = await answer(official, 'Hello from the official SDK.');
  print(`official SDK  → ${viaOfficial}`);

  // Switch 2: `import Keygate from '@keygate/sdk'` and `new Keygate(…)`; the rest of the app stays.
  const client = new Keygate({ baseURL, appKey });
  const viaKeygate = await answer(client, 'Hello from @keygate/sdk.');
  print(`@keygate/sdk  → ${viaKeygate}`);

  const total = client.usage.total();
  print(
    `usage so far  → ${total.calls} call${total.calls === 1 ? '' : 's'}, ${total.input_tokens} input and ${total.output_tokens} output tokens`,
  );
  return { viaOfficial, viaKeygate, total };
}

if (isMain(import.meta.url)) await runExample(main);
