import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeEach } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../src/index';

export const KEY = 'sk-ant-emulator-key';
export const MODEL = 'claude-haiku-4-5';

/**
 * The official SDK pointed at the emulator. SDK 1.x sends the key as `Authorization: Bearer`
 * only; the provider (and so the emulator) takes `x-api-key`, hence the default header.
 */
export function sdk(emulator: Emulator, headers: Record<string, string> = {}): Anthropic {
  return new Anthropic({
    apiKey: KEY,
    baseURL: emulator.url,
    maxRetries: 0,
    defaultHeaders: { 'x-api-key': KEY, ...headers },
  });
}

/** One emulator per test file; each test starts with an empty ledger and cache. */
export function useEmulator(opts: EmulatorOptions = {}): {
  readonly emulator: Emulator;
  readonly client: Anthropic;
} {
  const state = {} as { emulator: Emulator; client: Anthropic };
  beforeEach(async () => {
    if (!state.emulator) {
      state.emulator = await startEmulator(opts);
      state.client = sdk(state.emulator);
    }
    state.emulator.ledger.clear();
    state.emulator.cache.clear();
  });
  afterAll(async () => {
    await state.emulator?.close();
  });
  return state;
}

export const ask = (text: string, extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {}) => ({
  model: MODEL,
  max_tokens: 1_024,
  messages: [{ role: 'user' as const, content: text }],
  ...extra,
});

/** POST a raw body (for what the SDK would refuse to send). */
export function post(
  emulator: { url: string },
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(emulator.url + path, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Splits a raw SSE body into [event, data] pairs, checking the framing on the way. */
export function parseSse(text: string): Array<{ event: string; data: string }> {
  if (!text.endsWith('\n\n')) throw new Error('SSE body does not end with a blank line');
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((frame) => {
      const match = /^event: ([a-z_]+)\ndata: (.*)$/.exec(frame);
      if (!match) throw new Error(`bad SSE frame: ${JSON.stringify(frame)}`);
      return { event: match[1]!, data: match[2]! };
    });
}
