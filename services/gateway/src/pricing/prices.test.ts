import { describe, expect, it } from 'vitest';
import { formatCents, priceFor, usageCostCents } from './prices';

const zero = {
  uncached_input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  'cache_creation.ephemeral_5m_input_tokens': 0,
  'cache_creation.ephemeral_1h_input_tokens': 0,
  web_search_requests: 0,
};

describe('model prices', () => {
  it('picks the longest matching prefix, for dated ids and aliases alike', () => {
    expect(priceFor('claude-opus-4-5-20251101').displayName).toBe('Claude Opus 4.5');
    expect(priceFor('claude-opus-4-5').displayName).toBe('Claude Opus 4.5');
    expect(priceFor('claude-opus-4-20250514').displayName).toBe('Claude Opus 4');
    expect(priceFor('claude-sonnet-4-5-20250929').input).toBe(3);
    expect(priceFor('claude-3-5-haiku-latest').output).toBe(4);
  });

  it('prices an unlisted model at the highest rates, and says so', () => {
    const p = priceFor('some-new-model');
    expect(p.input).toBe(15);
    expect(p.displayName).toMatch(/Unlisted/);
    expect(priceFor(null).output).toBe(75);
  });

  it('costs each token type at its rate, in USD cents', () => {
    // 1M input at $5 + 1M output at $25 + 1M 5m writes at $6.25 + 1M 1h writes at $10 + 1M reads at $0.50 + 100 searches at $0.01
    const cents = usageCostCents('claude-opus-4-5', {
      uncached_input_tokens: 1e6,
      output_tokens: 1e6,
      'cache_creation.ephemeral_5m_input_tokens': 1e6,
      'cache_creation.ephemeral_1h_input_tokens': 1e6,
      cache_read_input_tokens: 1e6,
      web_search_requests: 100,
    });
    expect(cents).toBeCloseTo((5 + 25 + 6.25 + 10 + 0.5 + 1) * 100, 6);
    expect(usageCostCents('claude-3-haiku-20240307', { ...zero, output_tokens: 1000 })).toBeCloseTo(0.125, 9);
  });

  it('formats amounts as decimal strings in cents', () => {
    expect(formatCents(123.45)).toBe('123.45');
    expect(formatCents(0)).toBe('0');
    expect(formatCents(0.125)).toBe('0.125');
    expect(formatCents(1900)).toBe('1900');
  });
});
