/**
 * A tool loop: the model asks for tools, the handlers run, the results go back, until the model
 * answers. Inputs are checked against each tool's schema (JSON Schema or zod); every call of
 * the loop is one request group at the gateway.
 *
 * Run: pnpm --filter @keygate/examples tool-loop
 */
import Keygate, { z } from '@keygate/sdk';
import { isMain, runExample, type Connection, type Print } from './lib/offline';

const FORECASTS: Record<string, { celsius: number; sky: string }> = {
  'Paris, France': { celsius: 18, sky: 'clear' },
  Paris: { celsius: 18, sky: 'clear' },
  Lyon: { celsius: 21, sky: 'sunny' },
};

export async function main({ baseURL, appKey }: Connection, print: Print) {
  const client = new Keygate({ baseURL, appKey });
  const result = await client.runToolLoop({
    model: 'claude-sonnet-4-6',
    max_tokens: 1024,
    messages: [{ role: 'user', content: 'What is the weather in Paris, in Fahrenheit?' }],
    tools: [
      {
        name: 'get_weather',
        description: 'Current weather for a city',
        input_schema: {
          type: 'object',
          properties: { location: { type: 'string', description: 'City, Country' } },
          required: ['location'],
        },
      },
      {
        name: 'to_fahrenheit',
        description: 'Converts Celsius to Fahrenheit',
        input_schema: z.object({ celsius: z.number() }),
      },
    ],
    handlers: {
      get_weather: ({ location }) =>
        FORECASTS[String(location)] ?? { error: `no forecast for ${String(location)}` },
      to_fahrenheit: ({ celsius }) => celsius * 1.8 + 32,
    },
    maxTurns: 6,
    onTurn: (message, turn) => print(`turn ${turn}: stop_reason ${message.stop_reason}`),
  });

  for (const call of result.toolCalls)
    print(`  tool ${call.name}(${JSON.stringify(call.input)}) → ${call.outcome}: ${String(call.result)}`);
  const answer = result.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  print(`answer: ${answer}`);
  print(
    `group ${result.groupId}: ${result.usage.calls} calls, ${result.usage.input_tokens} input + ${result.usage.output_tokens} output tokens, ` +
      `${result.malformedToolCalls} malformed tool calls`,
  );
  return result;
}

if (isMain(import.meta.url)) await runExample(main);
