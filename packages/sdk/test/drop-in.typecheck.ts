/**
 * Type-level proof of the drop-in: the functions below are written against the official
 * client's types only, as an existing app would have them, and are then handed a Keygate.
 * `pnpm typecheck` fails if any of that stops compiling. Never run, only type-checked.
 */
import Anthropic, { type BaseAnthropic, type ClientOptions } from '@anthropic-ai/sdk';
import Keygate, {
  type Anthropic as ReExported,
  type APIError,
  type RateLimitError,
  type toFile,
} from '../src/index';

const MODEL: Anthropic.Model = 'claude-opus-4-5';
const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hello' }];

async function create(client: Anthropic): Promise<string> {
  const message: Anthropic.Message = await client.messages.create({
    model: MODEL,
    max_tokens: 256,
    messages,
  });
  const block = message.content[0];
  return block?.type === 'text' ? block.text : '';
}

async function createWithResponse(client: Anthropic): Promise<string | null> {
  const { data, response, request_id } = await client.messages
    .create({ model: MODEL, max_tokens: 16, messages })
    .withResponse();
  return data.id + response.status + request_id;
}

async function stream(client: Anthropic): Promise<Anthropic.Message> {
  const s = client.messages.stream({ model: MODEL, max_tokens: 256, messages, system: 'Be brief.' });
  s.on('text', (delta: string) => void delta);
  const final = await s.finalMessage();
  const text: string = await s.finalText();
  return text ? final : final;
}

async function rawEvents(client: Anthropic): Promise<number> {
  const events = await client.messages.create({ model: MODEL, max_tokens: 256, messages, stream: true });
  let output = 0;
  for await (const event of events) if (event.type === 'message_delta') output = event.usage.output_tokens;
  events.controller.abort();
  return output;
}

async function tools(client: Anthropic): Promise<Anthropic.ToolUseBlock | undefined> {
  const tool: Anthropic.Tool = {
    name: 'get_weather',
    input_schema: { type: 'object', properties: { city: { type: 'string' } } },
  };
  const message = await client.messages.create({
    model: MODEL,
    max_tokens: 256,
    messages,
    tools: [tool],
    tool_choice: { type: 'auto' },
  });
  return message.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
}

async function countTokens(client: Anthropic): Promise<number> {
  const counted: Anthropic.MessageTokensCount = await client.messages.countTokens({ model: MODEL, messages });
  return counted.input_tokens;
}

async function models(client: Anthropic): Promise<string[]> {
  const ids: string[] = [];
  for await (const model of client.models.list({ limit: 20 })) ids.push(model.id);
  const one: Anthropic.ModelInfo = await client.models.retrieve(MODEL);
  return [...ids, one.id];
}

async function beta(client: Anthropic): Promise<Anthropic.Beta.BetaMessage> {
  const streamed = await client.beta.messages
    .stream({ model: MODEL, max_tokens: 64, messages, betas: ['context-management-2025-06-27'] })
    .finalMessage();
  return client.beta.messages.create({ model: MODEL, max_tokens: streamed.usage.output_tokens, messages });
}

async function batches(client: Anthropic): Promise<string> {
  const batch = await client.messages.batches.create({
    requests: [{ custom_id: 'a', params: { model: MODEL, max_tokens: 16, messages } }],
  });
  return batch.id;
}

function errors(error: unknown): string {
  if (error instanceof Anthropic.RateLimitError) return `retry after ${error.headers?.get('retry-after')}`;
  if (error instanceof Anthropic.APIError) return `${error.status} ${error.requestID}`;
  if (error instanceof Anthropic.APIConnectionTimeoutError) return 'timeout';
  return String(error);
}

function configure(client: Anthropic): Anthropic {
  return client.withOptions({ timeout: 30_000, maxRetries: 5, defaultHeaders: { 'x-team': 'blue' } });
}

function base(client: BaseAnthropic): string {
  return client.baseURL;
}

/** The same app code, given a Keygate. */
export async function dropIn(options: ClientOptions): Promise<unknown[]> {
  const keygate = new Keygate(options);
  const asOfficial: Anthropic = keygate;
  const grouped: Keygate = keygate.group('invoice-42');
  const copy: Keygate = keygate.withOptions({ timeout: 1_000 });
  const typesStillThere: ReExported.MessageParam[] = messages;
  const sameErrors: [typeof APIError, typeof RateLimitError, typeof toFile] = [
    Anthropic.APIError,
    Anthropic.RateLimitError,
    Anthropic.toFile,
  ];
  return Promise.all([
    create(keygate),
    createWithResponse(grouped),
    stream(copy),
    rawEvents(keygate),
    tools(keygate),
    countTokens(keygate),
    models(keygate),
    beta(keygate),
    batches(keygate),
    errors(new Keygate.RateLimitError(429, undefined, 'limited', new Headers())),
    configure(keygate),
    base(asOfficial),
    typesStillThere,
    sameErrors,
  ]);
}
