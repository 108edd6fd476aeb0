import { describe, expect, it } from 'vitest';
import { GatewayError } from '../lib/errors';
import { matches } from './exchange';
import { OAuthError, oauthErrorBody } from '../lib/oauth-error';

const gha = { sub: 'repo:acme/app:ref:refs/heads/main', repository_owner: 'acme', run_id: '42' };

describe('rule matchers', () => {
  it('subject: exact, or a prefix when it ends with *', () => {
    expect(matches({ subject_prefix: 'repo:acme/app:ref:refs/heads/main' }, gha)).toBe(true);
    expect(matches({ subject_prefix: 'repo:acme/app:ref:refs/heads/mai' }, gha)).toBe(false);
    expect(matches({ subject_prefix: 'repo:acme/app:*' }, gha)).toBe(true);
    expect(matches({ subject_prefix: 'repo:acme/other:*' }, gha)).toBe(false);
    expect(matches({ subject_prefix: 'repo:acme/app:*' }, { ...gha, sub: undefined })).toBe(false);
  });

  it('claims: each must equal a top-level string claim', () => {
    expect(matches({ claims: { repository_owner: 'acme' } }, gha)).toBe(true);
    expect(matches({ claims: { repository_owner: 'acme', run_id: '43' } }, gha)).toBe(false);
    expect(matches({ claims: { missing: '' } }, gha)).toBe(false);
    // Not a string: a number never equals the string a rule names.
    expect(matches({ claims: { run_id: '42' } }, { ...gha, run_id: 42 })).toBe(false);
  });
});

describe("the token endpoint's errors (RFC 6749 §5.2)", () => {
  it("its own refusals are 400 with the code; the gateway's keep their status; others name nothing", () => {
    expect(oauthErrorBody(new OAuthError('invalid_grant', 'expired'))).toEqual({
      status: 400,
      headers: {},
      body: { error: 'invalid_grant', error_description: 'expired' },
    });
    const limited = new GatewayError('rate_limit_error', 'Too many', { headers: { 'retry-after': '9' } });
    expect(oauthErrorBody(limited)).toMatchObject({ status: 429, headers: { 'retry-after': '9' } });
    expect(oauthErrorBody(new Error('db password in here'))).toEqual({
      status: 500,
      headers: {},
      body: { error: 'server_error', error_description: 'Internal error.' },
    });
  });
});
