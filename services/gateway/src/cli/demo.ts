import Anthropic from '@anthropic-ai/sdk';
import { startEmulator } from '@keygate/emulator';
import { makeTestPdf } from '@keygate/pdf';
import { join } from 'node:path';
import { createAccount, createKey } from '../accounts/service';
import { loadConfig } from '../config';
import { createLogger } from '../lib/logger';
import { SecretBox } from '../lib/secret-box';
import { startGateway } from '../server';
import { recordedUsage } from './demo-queries';
import { table } from './output';

/**
 * The offline tour: the emulator stands in for the provider, the gateway runs on the
 * embedded database, and a few real calls go through it with the official SDK.
 */
const base = loadConfig();
const providerKey = 'sk-ant-demo-provider-key-0000';
const emulator = await startEmulator({ port: 0, apiKey: providerKey });
// Everything the demo's gateway owns is its own, so it runs beside a gateway on the same data dir.
const dataDir = join(base.dataDir, 'demo');
const config = {
  ...base,
  port: 0,
  metricsPort: null,
  upstreamUrl: emulator.url,
  dataDir,
  spoolDir: join(dataDir, 'spool'),
  flushIntervalMs: 20,
};
const gateway = await startGateway(config, { logger: createLogger('warn') });
const say = (line: string) => process.stdout.write(`${line}\n`);

try {
  say(`emulator (stand-in provider): ${emulator.url}`);
  say(`gateway:                      ${gateway.url}  (embedded database in ${config.dataDir})\n`);
  const deps = {
    store: gateway.store,
    box: new SecretBox((await import('../lib/data-dir')).persistentSecret(config.dataDir, 'secret')),
    clock: Date.now,
  };
  const { account } = await createAccount(deps, {
    name: 'Demo team',
    plan: 'team',
    providerKey,
    adminEmail: 'lead@example.com',
  });
  const { secret: appKey, key } = await createKey(deps, {
    accountId: account.id,
    kind: 'live',
    app: 'demo-app',
    environment: 'dev',
  });
  say(`account ${account.id} (team plan, trial until ${account.trialEndsAt?.toISOString().slice(0, 10)})`);
  say(`app key ${key.id}: ${key.hint}\n`);

  const client = new Anthropic({ baseURL: gateway.url, authToken: appKey, apiKey: null });
  const model = 'claude-opus-4-5';

  const created = await client.messages.create({
    model,
    max_tokens: 200,
    messages: [{ role: 'user', content: 'Say hello through Keygate.' }],
  });
  say(`messages.create  → ${JSON.stringify(created.usage)}`);

  const streamed = await client.messages
    .stream({ model, max_tokens: 200, messages: [{ role: 'user', content: 'Stream a short poem.' }] })
    .finalMessage();
  say(`messages.stream  → ${JSON.stringify(streamed.usage)}`);

  const tools: Anthropic.Tool[] = [
    {
      name: 'get_weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ];
  const group = { headers: { 'keygate-group-id': 'demo-tool-loop' } };
  const ask = await client.messages.create(
    { model, max_tokens: 200, tools, messages: [{ role: 'user', content: 'Weather in Lyon?' }] },
    group,
  );
  const use = ask.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
  const answer = await client.messages.create(
    {
      model,
      max_tokens: 200,
      tools,
      messages: [
        { role: 'user', content: 'Weather in Lyon?' },
        { role: 'assistant', content: ask.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21°C, sunny' }] },
      ],
    },
    group,
  );
  say(`tool loop        → ${ask.stop_reason} then ${answer.stop_reason}`);

  const pdf = Buffer.from(await makeTestPdf({ pages: 4 })).toString('base64');
  const summary = await client.messages.create({
    model,
    max_tokens: 300,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
          { type: 'text', text: 'Summarize as bullets.' },
        ],
      },
    ],
  });
  say(`4-page PDF       → ${JSON.stringify(summary.usage)}\n`);

  await gateway.writer.flush();
  const rows = await recordedUsage(gateway.store.db.sql, account.id);
  say('Recorded usage (from the call log):');
  say(table(rows as unknown as Record<string, unknown>[]));
} finally {
  await gateway.close();
  await emulator.close();
}
