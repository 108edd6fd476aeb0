import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance, nearest } from './suggest';

describe('did you mean', () => {
  it('counts a swap of two neighbours as one edit', () => {
    expect(editDistance('craete', 'create')).toBe(1);
    expect(editDistance('acount', 'account')).toBe(1);
    expect(editDistance('membr', 'member')).toBe(1);
    expect(editDistance('', 'key')).toBe(3);
  });

  it('suggests the one nearest candidate, and nothing for a word far from every candidate', () => {
    expect(nearest('acount', ['account', 'key', 'member'])).toBe('account');
    expect(nearest('craete', ['create', 'list', 'revoke'])).toBe('create');
    expect(nearest('zzzzzz', ['create', 'list', 'revoke'])).toBeUndefined();
    // Two candidates equally near: no guess rather than a wrong one.
    expect(nearest('kex', ['key', 'kez'])).toBeUndefined();
  });

  it('phrases the suggestion, or says nothing', () => {
    expect(didYouMean('membr', ['member', 'model'])).toBe(" Did you mean 'member'?");
    expect(didYouMean('--jsno', ['json', 'help'], (c) => `--${c}`)).toBe('');
    expect(didYouMean('jsno', ['json', 'help'], (c) => `--${c}`)).toBe(" Did you mean '--json'?");
  });
});
