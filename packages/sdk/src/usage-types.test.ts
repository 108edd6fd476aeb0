import { describe, expect, it } from 'vitest';
import { normalizeUsage } from './usage-types';

describe('normalizeUsage: cache writes split as the gateway records them', () => {
  it.each([
    // The old copy read a null 5-minute part as no writes; the gateway as the rest of the total.
    [
      {
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: null, ephemeral_1h_input_tokens: 10 },
      },
      30,
      20,
      10,
    ],
    // …and counted 10 one-hour writes of a total of 5.
    [{ cache_creation_input_tokens: 5, cache_creation: { ephemeral_1h_input_tokens: 10 } }, 5, 0, 5],
    [{ cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 6 } }, 10, 4, 6],
    [{ cache_creation_input_tokens: 30 }, 30, 30, 0],
  ])('%j', (usage, total, fiveMinute, oneHour) => {
    const u = normalizeUsage(usage);
    expect(u.cache_creation_input_tokens).toBe(total);
    expect(u.cache_creation).toEqual({
      ephemeral_5m_input_tokens: fiveMinute,
      ephemeral_1h_input_tokens: oneHour,
    });
  });
});
