import { describe, expect, it } from 'vitest';
import { startMessage } from './start-message';

const embedded = {
  publicUrl: null,
  operatorToken: null,
  dataDir: '/srv/keygate/.keygate',
  databaseUrl: null,
  billingEnforced: true,
};

describe('the message `keygate serve` prints once it listens', () => {
  it('a fresh gateway: the dashboard, where the operator token is, and the command that makes an account', () => {
    const text = startMessage(embedded, { url: 'http://127.0.0.1:8080', hasAccounts: false });
    expect(text.split('\n')[0]).toBe('Keygate is running at http://127.0.0.1:8080');
    expect(text).toContain(
      'Dashboard  http://127.0.0.1:8080/dashboard  (sign in with an admin key, or with the operator token in /srv/keygate/.keygate/operator-token)',
    );
    expect(text).toContain('pnpm keygate account create --name "My team" --plan team');
    expect(text).toContain('start with KEYGATE_BILLING=off');
    expect(text).toContain('pnpm keygate key create --account acct_… --test');
    expect(text.endsWith('Stop with Ctrl-C (calls in flight finish first).\n')).toBe(true);
  });

  it('with accounts: how to point Claude Code at it; the public URL and loopback for a wildcard bind', () => {
    const text = startMessage(
      { ...embedded, publicUrl: 'https://keygate.acme.test', operatorToken: 'x'.repeat(20) },
      { url: 'http://0.0.0.0:8080', hasAccounts: true },
    );
    expect(text).toContain('Keygate is running at https://keygate.acme.test');
    expect(text).toContain(
      'ANTHROPIC_BASE_URL=https://keygate.acme.test ANTHROPIC_AUTH_TOKEN=kg_live_… claude',
    );
    expect(text).toContain('the operator token (KEYGATE_OPERATOR_TOKEN)');
    expect(text).not.toContain('account create');
    expect(startMessage(embedded, { url: 'http://0.0.0.0:9000', hasAccounts: true })).toContain(
      'Keygate is running at http://127.0.0.1:9000',
    );
  });

  it('with billing off, says no trial runs out', () => {
    const text = startMessage(
      { ...embedded, billingEnforced: false },
      { url: 'http://127.0.0.1:8080', hasAccounts: false },
    );
    expect(text).toContain('Billing is off (KEYGATE_BILLING=off)');
  });
});
