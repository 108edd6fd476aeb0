/**
 * Streaming with usage: the text arrives as it is generated, and Keygate reads the stream's
 * usage from its last events on the side, without holding anything back.
 *
 * Run: pnpm --filter @keygate/examples stream-usage
 */
import Keygate, { type UsageRecord } from '@keygate/sdk';
import { isMain, runExample, type Connection, type Print } from './lib/offline';

export async function main({ baseURL, appKey }: Connection, print: Print) {
  const records: UsageRecord[] = [];
  const client = new Keygate({ baseURL, appKey, onUsage: (record) => records.push(record) });

  const chunks: string[] = [];
  const stream = client.messages.stream({
    model: 'claude-sonnet-4-6',
    max_tokens: 300,
    messages: [{ role: 'user', content: 'Write a short poem about gateways.' }],
  });
  stream.on('text', (text) => chunks.push(text));
  const message = await stream.finalMessage();
  print(`streamed ${chunks.length} text chunks: ${chunks.join('')}`);

  const [record] = records;
  if (!record) throw new Error('onUsage was not called');
  print(`finalMessage().usage → input ${message.usage.input_tokens}, output ${message.usage.output_tokens}`);
  print(
    `onUsage record       → input ${record.usage?.input_tokens}, output ${record.usage?.output_tokens}, ` +
      `cache writes ${record.usage?.cache_creation_input_tokens}, reads ${record.usage?.cache_read_input_tokens}, ` +
      `${record.latencyMs} ms, first byte after ${record.ttfbMs} ms, request ${record.requestId}`,
  );
  return { text: chunks.join(''), chunks: chunks.length, message, record };
}

if (isMain(import.meta.url)) await runExample(main);
