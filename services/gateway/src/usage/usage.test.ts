import { describe, expect, it } from 'vitest';
import { usageFigures } from './usage';

describe('usageFigures: cache writes split as the protocol package reads them', () => {
  it.each([
    // The old copy stored -5 five-minute writes when the 1-hour part exceeded the total.
    [{ cache_creation_input_tokens: 5, cache_creation: { ephemeral_1h_input_tokens: 10 } }, 5, 0, 5],
    // …and kept a 5-minute part that left writes of the total unpriced.
    [
      {
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: 5, ephemeral_1h_input_tokens: 10 },
      },
      30,
      20,
      10,
    ],
    [{ cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 6 } }, 10, 4, 6],
    [{ cache_creation_input_tokens: 30 }, 30, 30, 0],
  ])('%j', (usage, total, fiveMinute, oneHour) => {
    const u = usageFigures(usage);
    expect([u.cacheCreationInputTokens, u.cacheCreation5mTokens, u.cacheCreation1hTokens]).toEqual([
      total,
      fiveMinute,
      oneHour,
    ]);
  });
});
