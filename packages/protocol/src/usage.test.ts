import { describe, expect, it } from 'vitest';
import { cacheWrites } from './usage';

// [usage as the provider sent it, total, 5-minute, 1-hour]
const CACHE_WRITE_CASES: Array<[string, Record<string, unknown>, number, number, number]> = [
  [
    'the breakdown, adding up',
    {
      cache_creation_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
    },
    30,
    20,
    10,
  ],
  ['no breakdown (older models): all 5-minute', { cache_creation_input_tokens: 30 }, 30, 30, 0],
  ['a null breakdown', { cache_creation_input_tokens: 30, cache_creation: null }, 30, 30, 0],
  // The old SDK read a null 5-minute part as 0 writes, the gateway as the rest of the total.
  [
    'a null 5-minute part',
    {
      cache_creation_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: null, ephemeral_1h_input_tokens: 10 },
    },
    30,
    20,
    10,
  ],
  // The old gateway stored -5 five-minute writes here; the SDK 10 one-hour writes of a total of 5.
  [
    'a 1-hour part above the total',
    { cache_creation_input_tokens: 5, cache_creation: { ephemeral_1h_input_tokens: 10 } },
    5,
    0,
    5,
  ],
  [
    'parts short of the total: the rest is 5-minute',
    {
      cache_creation_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 5, ephemeral_1h_input_tokens: 10 },
    },
    30,
    20,
    10,
  ],
  [
    'no total: the sum of the parts',
    { cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 6 } },
    10,
    4,
    6,
  ],
  ['nothing cached', { input_tokens: 3 }, 0, 0, 0],
  [
    'nonsense values count as 0',
    { cache_creation_input_tokens: -3, cache_creation: { ephemeral_1h_input_tokens: 'x' } },
    0,
    0,
    0,
  ],
];

describe('cacheWrites: the one reading of the 5-minute / 1-hour split', () => {
  it.each(CACHE_WRITE_CASES)('%s', (_name, usage, total, fiveMinute, oneHour) => {
    expect(cacheWrites(usage)).toEqual({ total, fiveMinute, oneHour });
  });

  it('reads no usage as no writes', () => {
    expect(cacheWrites(null)).toEqual({ total: 0, fiveMinute: 0, oneHour: 0 });
  });
});
