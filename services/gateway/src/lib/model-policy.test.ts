import { describe, expect, it } from 'vitest';
import { compilePolicy, type PolicyRule } from './model-policy';

const rule = (o: Partial<PolicyRule>): PolicyRule => ({
  subject: 'organization',
  subjectId: 'acct_1',
  label: 'Acme',
  allowedModels: null,
  maxTokens: null,
  ...o,
});

describe('model policy', () => {
  it('no rule, or rules that restrict nothing, compile to null (no cost per call)', () => {
    expect(compilePolicy([])).toBeNull();
    expect(compilePolicy([rule({})])).toBeNull();
  });

  it('exact ids and family patterns; every allow-list must allow the model', () => {
    const p = compilePolicy([
      rule({ allowedModels: ['claude-sonnet-*', 'claude-haiku-4-5'] }),
      rule({
        subject: 'rbac_group',
        subjectId: 'rbacgrp_1',
        label: 'Contractors',
        allowedModels: ['claude-sonnet-4-5'],
      }),
    ])!;
    expect(p.check('claude-sonnet-4-5', 100)).toBeNull();
    expect(p.allows('claude-haiku-4-5')).toBe(false);
    expect(p.check('claude-haiku-4-5', 100)).toBe(
      "model: 'claude-haiku-4-5' is not allowed by the model policy of group 'Contractors' (rbacgrp_1), which allows claude-sonnet-4-5.",
    );
    expect(p.check('claude-opus-4-5', 100)).toBe(
      "model: 'claude-opus-4-5' is not allowed by the account's model policy, which allows claude-sonnet-*, claude-haiku-4-5.",
    );
    // A pattern is a prefix, not a substring.
    expect(p.allows('x-claude-sonnet-4-5')).toBe(false);
  });

  it('an empty allow-list allows no model', () => {
    expect(compilePolicy([rule({ allowedModels: [] })])!.check('claude-sonnet-4-5', null)).toMatch(
      /allows no model\.$/,
    );
  });

  it('the lowest max_tokens ceiling binds and names its rule; count_tokens (null) is not held to it', () => {
    const p = compilePolicy([
      rule({ maxTokens: 4096 }),
      rule({ subject: 'api_key', subjectId: 'key_1', label: 'ci', maxTokens: 1024 }),
    ])!;
    expect(p.check('claude-sonnet-4-5', 1024)).toBeNull();
    expect(p.check('claude-sonnet-4-5', 1025)).toBe(
      "max_tokens: 1025 is above the ceiling of 1024 set by the model policy of key 'ci' (key_1).",
    );
    expect(p.check('claude-sonnet-4-5', null)).toBeNull();
  });
});
