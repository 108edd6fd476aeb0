import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../lib/call-record';
import { BYTES_PER_TOKEN, CallEstimates, FIRST_OUTPUT_TOKENS } from './estimate';

const size = (inputBytes: number, maxTokens = 128_000) => ({
  model: 'claude-opus-5-5',
  inputBytes,
  pdfPages: 0,
  maxTokens,
});

const done = (id: string, keyId: string, usage: object): CallRecord =>
  ({ id, keyId, model: 'claude-opus-5-5', status: 200, usage }) as CallRecord;

describe('what a call is expected to use', () => {
  it("a key's first call: its bytes at 3.5 a token, nothing cached, a typical turn's output bounded by max_tokens", () => {
    const e = new CallEstimates();
    expect(e.estimate('key_a', 'req_1', size(700_000))).toEqual({
      inputTokens: 700_000 / BYTES_PER_TOKEN,
      cachedTokens: 0,
      outputTokens: FIRST_OUTPUT_TOKENS,
    });
    expect(e.estimate('key_a', 'req_2', size(700, 16)).outputTokens).toBe(16);
  });

  it("later calls: the key's own bytes per token, the prefix its last call read and wrote, the most its last calls wrote", () => {
    const e = new CallEstimates();
    e.estimate('key_a', 'req_1', size(600_000));
    // 600,000 bytes counted as 150,000 tokens: 4 bytes a token; 140,000 of them are in the cache now.
    e.observe(
      done('req_1', 'key_a', {
        input_tokens: 10_000,
        cache_read_input_tokens: 120_000,
        cache_creation_input_tokens: 20_000,
        output_tokens: 700,
      }),
    );
    e.estimate('key_a', 'req_2', size(400_000));
    e.observe(done('req_2', 'key_a', { input_tokens: 100_000, output_tokens: 300 }));
    // The last call set the prefix (nothing cached) and the ratio; the output is the most of the last calls.
    expect(e.estimate('key_a', 'req_3', size(640_000))).toEqual({
      inputTokens: 160_000,
      cachedTokens: 0,
      outputTokens: 700,
    });
    e.observe(
      done('req_3', 'key_a', {
        input_tokens: 16_000,
        cache_read_input_tokens: 140_000,
        cache_creation_input_tokens: 4_000,
        output_tokens: 500,
      }),
    );
    expect(e.estimate('key_a', 'req_4', size(660_000))).toEqual({
      inputTokens: 165_000 - 144_000,
      cachedTokens: 144_000,
      outputTokens: 700,
    });
  });

  it("another key's first call on the model goes by its ratio and output, not its cache", () => {
    const e = new CallEstimates();
    e.estimate('key_a', 'req_1', size(600_000));
    e.observe(
      done('req_1', 'key_a', { input_tokens: 30_000, cache_read_input_tokens: 120_000, output_tokens: 900 }),
    );
    expect(e.estimate('key_b', 'req_2', size(600_000))).toEqual({
      inputTokens: 150_000,
      cachedTokens: 0,
      outputTokens: 900,
    });
  });
});
