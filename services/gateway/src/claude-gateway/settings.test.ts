import { describe, expect, it } from 'vitest';
import { compilePolicy, type PolicyRule } from '../lib/model-policy';
import type { Principal } from '../auth/resolver';
import { availableModels, managedSettings, matches } from './settings';

const rule = (subjectId: string, allowedModels: string[] | null): PolicyRule => ({
  subject: 'rbac_group',
  subjectId,
  label: subjectId,
  allowedModels,
  maxTokens: null,
});

describe('availableModels: the model policy as Claude Code reads it', () => {
  it('is absent when nothing restricts models', () => {
    expect(availableModels(null)).toBeUndefined();
    expect(availableModels(compilePolicy([rule('a', null)]))).toBeUndefined();
  });

  it('gives ids as they are and family patterns as prefixes', () => {
    const policy = compilePolicy([rule('a', ['claude-opus-*', 'claude-haiku-4-5'])]);
    expect(availableModels(policy)).toEqual(['claude-haiku-4-5', 'claude-opus']);
  });

  it('keeps only what every rule allows (the strictest wins, as on the calls)', () => {
    const policy = compilePolicy([rule('a', ['claude-*']), rule('b', ['claude-sonnet-4-5', 'gpt-x'])]);
    expect(availableModels(policy)).toEqual(['claude-sonnet-4-5']);
    expect(availableModels(compilePolicy([rule('a', [])]))).toEqual([]);
  });
});

describe('matches: If-None-Match against the settings checksum', () => {
  it('takes the quoted form Claude Code sends, weak tags and lists; refuses others', () => {
    expect(matches('"sha256:ab"', 'sha256:ab')).toBe(true);
    expect(matches('W/"sha256:ab", "x"', 'sha256:ab')).toBe(true);
    expect(matches('"sha256:cd"', 'sha256:ab')).toBe(false);
    expect(matches(undefined, 'sha256:ab')).toBe(false);
  });
});

describe('managedSettings: the environment pushed to Claude Code', () => {
  const principal = { policy: null } as unknown as Principal;

  it('keeps MCP tool search on behind the gateway, unless the admin says otherwise', () => {
    const base = 'https://keygate.example/claude/acct_1';
    expect(managedSettings(principal, base, {}).settings.env.ENABLE_TOOL_SEARCH).toBe('true');
    const off = managedSettings(principal, base, { ENABLE_TOOL_SEARCH: 'false' });
    expect(off.settings.env.ENABLE_TOOL_SEARCH).toBe('false');
    expect(off.checksum).not.toBe(managedSettings(principal, base, {}).checksum);
  });
});
