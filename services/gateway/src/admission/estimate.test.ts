import { BUNDLED_CATALOG } from '../pricing/catalog/catalog';
import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../lib/call-record';
import { ceilingRates, expectedMicroUsd } from './ceiling';
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
    // The last call set the ratio and read nothing, but the first call's prefix still fits this
    // one (another session of the key); the output is the most of the last calls.
    expect(e.estimate('key_a', 'req_3', size(640_000))).toEqual({
      inputTokens: 160_000 - 140_000,
      cachedTokens: 140_000,
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

describe('one key, a main session and its subagents', () => {
  it("a main session's call reads its own large prefix, not the last subagent's small one", () => {
    const e = new CallEstimates();
    const turn = (id: string, bytes: number, cached: number, fresh: number) => {
      e.estimate('key_a', id, size(bytes));
      e.observe(
        done(id, 'key_a', {
          input_tokens: 50,
          cache_read_input_tokens: cached,
          cache_creation_input_tokens: fresh,
          output_tokens: 400,
        }),
      );
    };
    turn('main_1', 1_200_000, 280_000, 20_000); // the main session: 300,000 tokens, 4 bytes a token
    turn('sub_1', 80_000, 15_000, 4_950); // a subagent: 20,000 tokens
    // Before, the last call's prefix (19,950) was taken for the main session's next call.
    expect(e.estimate('key_a', 'main_2', size(1_240_000)).cachedTokens).toBe(300_000);
    // A subagent's next call cannot read more than it sends: the largest prefix that fits.
    expect(e.estimate('key_a', 'sub_2', size(88_000)).cachedTokens).toBe(19_950);
  });
});

describe("a call's expected cost prices new input at the cache write its body asks for", () => {
  const e = { inputTokens: 10_000, cachedTokens: 90_000, outputTokens: 1_000 };
  const r = ceilingRates(BUNDLED_CATALOG, 'claude-opus-5-5');
  it('plain input without cache_control, the 5-minute write rate, the 1-hour rate (the default)', () => {
    const rest = 90_000 * r.cacheRead + 1_000 * r.output;
    expect(expectedMicroUsd(BUNDLED_CATALOG, 'claude-opus-5-5', e, null)).toBe(
      Math.ceil(10_000 * r.plainInput + rest),
    );
    expect(expectedMicroUsd(BUNDLED_CATALOG, 'claude-opus-5-5', e, '5m')).toBe(
      Math.ceil(10_000 * r.write5m + rest),
    );
    expect(expectedMicroUsd(BUNDLED_CATALOG, 'claude-opus-5-5', e)).toBe(Math.ceil(10_000 * r.input + rest));
    // The catalog's rates for Opus: a 5-minute write is 1.25x input, a 1-hour write 2x.
    expect(r.write5m / r.plainInput).toBeCloseTo(1.25);
    expect(r.input / r.plainInput).toBeCloseTo(2);
  });
});
