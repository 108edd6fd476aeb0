import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createKey } from '../src/accounts/service';
import { randomBase62 } from '../src/lib/ids';
import { api, callModel, PROVIDER_KEY, startStack, type Stack } from './harness';

const OPERATOR = 'operator-token-0123456789';
let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

/** An account whose provider key the provider (the emulator) does not accept, with an admin key and a live and a test key. */
async function refusedAccount() {
  const wrongKey = `sk-ant-api03-${randomBase62(40)}`;
  const { account, admin } = await createAccount(stack.deps, {
    name: 'Refused',
    plan: 'team',
    providerKey: wrongKey,
    adminEmail: `a-${randomBase62(6)}@refused.test`,
  });
  const live = await createKey(stack.deps, {
    accountId: account.id,
    kind: 'live',
    memberId: null,
    app: null,
    environment: null,
  });
  const test = await createKey(stack.deps, {
    accountId: account.id,
    kind: 'test',
    memberId: null,
    app: null,
    environment: null,
  });
  return { account, wrongKey, adminKey: admin!.secret, live: live.secret, test: test.secret };
}

const refusalLogs = (accountId: string) =>
  stack.logs.filter((l) => l.includes('refused the account') && l.includes(accountId));

/** Counts the database writes of the provider key's status. */
function countStatusWrites(): { count: number; restore(): void } {
  const accounts = stack.gateway.store.accounts;
  const original = accounts.setProviderKeyStatus;
  const counter = { count: 0, restore: () => void (accounts.setProviderKeyStatus = original) };
  accounts.setProviderKeyStatus = (...args) => {
    counter.count++;
    return original(...args);
  };
  return counter;
}

describe('the provider refuses the account provider key', () => {
  it('answers 403 naming the provider key, logs once a minute, and shows the key as failing', async () => {
    const acct = await refusedAccount();
    const writes = countStatusWrites();
    try {
      const res = await callModel(stack.gateway.url, acct.live);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        type: 'error',
        error: {
          type: 'permission_error',
          message: expect.stringMatching(
            /provider refused this account's provider key.*HTTP 401.*your app key is valid.*set a new provider key/,
          ),
        },
      });
      expect(res.body.request_id).toMatch(/^req_/);
      expect(res.headers.get('request-id')).toBe(res.body.request_id);

      const stream = await api(stack.gateway.url, '/v1/messages', {
        bearer: acct.live,
        body: {
          model: 'claude-opus-4-5',
          max_tokens: 16,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        },
      });
      expect(stream.status).toBe(403);
      expect(stream.body.error.type).toBe('permission_error');
      for (let i = 0; i < 3; i++) expect((await callModel(stack.gateway.url, acct.live)).status).toBe(403);
      // The test key goes to the built-in emulator, not the provider: unaffected.
      expect((await callModel(stack.gateway.url, acct.test)).status).toBe(200);

      expect(refusalLogs(acct.account.id)).toHaveLength(1);
      expect(stack.logs.join('\n')).not.toContain(acct.wrongKey);
      expect(writes.count).toBe(1);
    } finally {
      writes.restore();
    }

    const viaOperator = await api(stack.gateway.url, `/operator/v1/accounts/${acct.account.id}`, {
      bearer: OPERATOR,
    });
    expect(viaOperator.body).toMatchObject({
      provider_key_status: 'failing',
      provider_key_failed_at: expect.any(String),
    });
    const me = await api(stack.gateway.url, '/v1/organizations/me', { key: acct.adminKey });
    expect(me.body).toMatchObject({ provider_key_status: 'failing' });

    await stack.gateway.writer.flush();
    const [row] = await stack.gateway.store.db
      .sql`select status, error_type from calls where account_id = ${acct.account.id} and key_id is not null order by created_at limit 1`;
    expect(row).toMatchObject({ status: 403, error_type: 'permission_error' });

    // A new provider key clears it, and calls work again.
    const set = await api(stack.gateway.url, `/operator/v1/accounts/${acct.account.id}/provider_key`, {
      bearer: OPERATOR,
      body: { provider_key: PROVIDER_KEY },
    });
    expect(set.body).toMatchObject({ provider_key_status: 'ok', provider_key_failed_at: null });
    expect((await callModel(stack.gateway.url, acct.live)).status).toBe(200);
  }, 60_000);

  it('a later successful call clears the mark with one write, not one per call', async () => {
    const { account } = await createAccount(stack.deps, {
      name: 'Recovers',
      plan: 'team',
      providerKey: PROVIDER_KEY,
    });
    const key = await createKey(stack.deps, {
      accountId: account.id,
      kind: 'live',
      memberId: null,
      app: null,
      environment: null,
    });
    // As if an earlier call had been refused (say the provider had the key disabled for a while).
    expect(
      await stack.gateway.store.accounts.setProviderKeyStatus(
        account.id,
        account.providerKeySealed!,
        'failing',
      ),
    ).toBe(true);
    const writes = countStatusWrites();
    try {
      for (let i = 0; i < 3; i++) expect((await callModel(stack.gateway.url, key.secret)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
      expect(writes.count).toBe(1);
    } finally {
      writes.restore();
    }
    const after = await api(stack.gateway.url, `/operator/v1/accounts/${account.id}`, { bearer: OPERATOR });
    expect(after.body).toMatchObject({ provider_key_status: 'ok', provider_key_failed_at: null });
  }, 60_000);

  it('an account without a provider key shows it as missing', async () => {
    const { account } = await createAccount(stack.deps, { name: 'Keyless', plan: 'solo', providerKey: null });
    const res = await api(stack.gateway.url, `/operator/v1/accounts/${account.id}`, { bearer: OPERATOR });
    expect(res.body.provider_key_status).toBe('missing');
  });
});
