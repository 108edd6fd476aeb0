import { describe, expect, it } from 'vitest';
import { BUNDLED_CATALOG } from './catalog/catalog';
import { callCost, formatCents, Prices, promptBand, type TokenCounts } from './prices';

const NOW = new Date('2026-11-25T12:00:00Z');
const prices = new Prices();
const counts = (c: Partial<TokenCounts>): TokenCounts => ({
  uncached_input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  'cache_creation.ephemeral_5m_input_tokens': 0,
  'cache_creation.ephemeral_1h_input_tokens': 0,
  web_search_requests: 0,
  ...c,
});
const M = 1_000_000;

describe('the price catalog', () => {
  it('matches ids exactly, by alias and dated snapshot, never by prefix', () => {
    expect(BUNDLED_CATALOG.entry('claude-opus-4-5-20251101')?.id).toBe('claude-opus-4-5');
    expect(BUNDLED_CATALOG.entry('claude-opus-4-20250514')?.id).toBe('claude-opus-4-0');
    // A newer model than any in the catalog does not inherit its predecessor's price.
    expect(BUNDLED_CATALOG.entry('claude-opus-5-5-20270101')).toBeNull();
    expect(BUNDLED_CATALOG.entry('claude-opus-4')).toBeNull();
    expect(BUNDLED_CATALOG.entry('gpt-4o')).toBeNull();
  });

  it('records a source URL and the date read for every price', () => {
    for (const m of BUNDLED_CATALOG.data.models)
      for (const r of m.prices) {
        expect(r.source, m.id).toMatch(/^https:\/\//);
        expect(r.read_on, m.id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      }
  });
});

describe('Prices.callCost', () => {
  it('prices Claude Opus 5.5 at $4 / $20, $5 and $8 cache writes, $0.20 cache reads', () => {
    const c = prices.callCost(
      'claude-opus-5-5',
      counts({
        uncached_input_tokens: M,
        output_tokens: M,
        'cache_creation.ephemeral_5m_input_tokens': M,
        'cache_creation.ephemeral_1h_input_tokens': M,
        cache_read_input_tokens: M,
        web_search_requests: 100,
      }),
      { at: NOW, promptTokens: 0 },
    );
    expect(c.priced).toBe(true);
    expect(c.parts.uncached_input_tokens).toBe(400);
    expect(c.parts.output_tokens).toBe(2000);
    expect(c.parts['cache_creation.ephemeral_5m_input_tokens']).toBe(500);
    expect(c.parts['cache_creation.ephemeral_1h_input_tokens']).toBe(800);
    expect(c.parts.cache_read_input_tokens).toBeCloseTo(20, 9);
    expect(c.parts.web_search).toBe(100); // $10 per 1,000 searches
    expect(c.cents).toBeCloseTo(400 + 2000 + 500 + 800 + 20 + 100, 9);
  });

  it('charges the Haiku 5.5 rates above 100,000 prompt tokens on every token of the call', () => {
    const under = prices.callCost(
      'claude-haiku-5-5',
      counts({ uncached_input_tokens: 100_000, output_tokens: 1000 }),
      {
        at: NOW,
      },
    );
    // 100,000 × $0.10 + 1,000 × $0.50 per MTok = 1 + 0.05 cents.
    expect(under.cents).toBeCloseTo(1.05, 9);
    const over = prices.callCost(
      'claude-haiku-5-5',
      counts({ uncached_input_tokens: 60_000, cache_read_input_tokens: 40_001, output_tokens: 1000 }),
      { at: NOW },
    );
    // 60,000 × $0.50 + 40,001 × $0.05 + 1,000 × $2.50 per MTok.
    expect(over.cents).toBeCloseTo(3 + 0.200005 + 0.25, 9);
    expect(promptBand(100_001)).toBe(100_000);
    // A rollup keeps the band, and the band prices like the prompt it stands for.
    const banded = prices.callCost('claude-haiku-5-5', counts({ output_tokens: 1000 }), {
      at: NOW,
      promptTokens: 100_001,
    });
    expect(banded.cents).toBeCloseTo(0.25, 9);
  });

  it('applies fast mode, the batch discount and US-only inference', () => {
    const c = counts({ uncached_input_tokens: M, output_tokens: M });
    expect(prices.callCost('claude-opus-4-8', c, { at: NOW, speed: 'fast' }).cents).toBe((10 + 50) * 100);
    expect(prices.callCost('claude-opus-4-6', c, { at: NOW, speed: 'fast', promptTokens: 100 }).cents).toBe(
      (30 + 150) * 100,
    );
    expect(
      prices.callCost('claude-opus-4-6', c, { at: NOW, speed: 'fast', promptTokens: 200_001 }).cents,
    ).toBe((60 + 225) * 100);
    expect(prices.callCost('claude-opus-5-5', c, { at: NOW, batch: true }).cents).toBe((2 + 10) * 100);
    expect(prices.callCost('claude-opus-5-5', c, { at: NOW, inferenceGeo: 'us' }).cents).toBeCloseTo(
      24 * 110,
      9,
    );
    // Models older than Opus 4.6 take no data-residency multiplier.
    expect(prices.callCost('claude-opus-4-5', c, { at: NOW, inferenceGeo: 'us' }).cents).toBe(3000);
    expect(prices.batchMultiplier('claude-opus-5-5', NOW)).toBe(0.5);
    expect(prices.batchMultiplier('claude-mythos-preview', NOW)).toBeNull();
  });

  it('uses the row in force at the call: Sonnet 5.5 cache reads before and after 2026-10-07', () => {
    const c = counts({ cache_read_input_tokens: M });
    expect(
      prices.callCost('claude-sonnet-5-5', c, { at: new Date('2026-10-06T23:59:59Z') }).cents,
    ).toBeCloseTo(20, 9);
    expect(
      prices.callCost('claude-sonnet-5-5', c, { at: new Date('2026-10-07T00:00:00Z') }).cents,
    ).toBeCloseTo(10, 9);
  });

  it('leaves an unknown model unpriced with a fail-safe estimate at its family ceiling', () => {
    const c = prices.callCost('claude-opus-9', counts({ uncached_input_tokens: M, output_tokens: M }), {
      at: NOW,
    });
    expect(c.priced).toBe(false);
    // The highest Opus rates the catalog has: $15 / $75 (Opus 4, 4.1, 3).
    expect(c.cents).toBe((15 + 75) * 100);
    // Fast mode on a model with no fast price is unpriced too, estimated at the highest fast multiplier.
    const fast = prices.callCost('claude-opus-5-5', counts({ output_tokens: M }), { at: NOW, speed: 'fast' });
    expect(fast.priced).toBe(false);
    expect(fast.cents).toBe(20 * 6 * 100);
  });

  it('prices a model from the operator row in force, and only from its effective date', () => {
    const catalog = BUNDLED_CATALOG.withRow('claude-mythos-preview', {
      effective_from: '2026-11-01',
      input: 25,
      cache_write_5m: 31.25,
      cache_write_1h: 50,
      cache_read: 2.5,
      output: 125,
      source: 'operator',
      read_on: '2026-11-25',
      origin: 'operator',
    });
    const c = counts({ uncached_input_tokens: M });
    expect(
      callCost('claude-mythos-preview', c, { at: new Date('2026-10-31T12:00:00Z') }, catalog).priced,
    ).toBe(false);
    const after = callCost('claude-mythos-preview', c, { at: NOW }, catalog);
    expect(after.priced).toBe(true);
    expect(after.cents).toBe(2500);
    expect(catalog.entry('claude-mythos-preview')?.family).toBe('mythos');
  });

  it('formats amounts as the provider does', () => {
    expect(formatCents(1.23456789)).toBe('1.234568');
    expect(formatCents(0)).toBe('0');
  });
});
