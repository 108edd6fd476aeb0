import { describe, expect, it } from 'vitest';
import { byCategory, categoryOf } from './trouble';

describe("the overview's error categories", () => {
  it('counts refusals by the rule that refused them: a spend limit or budget is no rate limit', () => {
    expect(categoryOf({ errorType: 'billing_error', status: 429, refusal: 'spend_limit' })).toBe(
      'Spend limit or budget',
    );
    expect(categoryOf({ errorType: 'billing_error', status: 429, refusal: 'budget' })).toBe(
      'Spend limit or budget',
    );
    expect(categoryOf({ errorType: 'rate_limit_error', status: 429, refusal: 'rate_limit' })).toBe(
      'Rate limit',
    );
    expect(categoryOf({ errorType: 'billing_error', status: 402, refusal: 'billing' })).toBe(
      'Billing paused',
    );
    // Rows written before the refusal column: told apart by their error type.
    expect(categoryOf({ errorType: 'billing_error', status: 429 })).toBe('Spend limit or budget');
    const lines = byCategory([
      { errorType: 'billing_error', refusal: 'spend_limit', status: 429, calls: 3, retried: 0, retries: 0 },
      { errorType: 'rate_limit_error', refusal: 'rate_limit', status: 429, calls: 2, retried: 1, retries: 4 },
    ]);
    expect(lines.filter((l) => l.calls > 0).map((l) => [l.category, l.calls])).toEqual([
      ['Rate limit', 2],
      ['Spend limit or budget', 3],
    ]);
  });
});
