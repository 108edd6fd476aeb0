import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';

/**
 * Issue 19 item 3: model policy per account, group, member and key, refused before the
 * provider in its 400 shape with a message naming the rule, and model discovery cut to what
 * the caller may use; item 4: a member past their spend limit gets the 429 billing_error
 * answer with x-should-retry: false, and count_tokens never counts. Official SDK, real
 * gateway, the emulator as the provider.
 */
let stack: Stack;
let acme: SeededAccount;
const url = () => stack.gateway.url;

beforeAll(async () => {
  stack = await startStack();
  acme = await stack.seedAccount({ name: 'Policy' });
}, 60_000);
afterAll(() => stack?.close());

const admin = (path: string, body?: unknown, method?: string) =>
  api(url(), `/v1/organizations${path}`, { key: acme.adminKey, body, ...(method ? { method } : {}) });

async function memberWithKey(email: string) {
  const member = (await admin('/users', { email })).body as { id: string };
  const key = (await admin('/api_keys', { member_id: member.id, name: email })).body as {
    id: string;
    key: string;
  };
  return {
    memberId: member.id,
    keyId: key.id,
    client: new Anthropic({ apiKey: key.key, baseURL: url(), maxRetries: 0 }),
  };
}

/**
 * Requests the emulator has received so far: a refused call never reaches it. Read from the
 * emulator's ledger, which counts a request as it arrives; the call log is written after the
 * answer, so counting its rows raced with the records of earlier calls still on their way.
 */
const upstreamCalls = () => stack.emulator.ledger.entries.length;

const ask = (client: Anthropic, model: string, max_tokens = 16) =>
  client.messages.create({ model, max_tokens, messages: [{ role: 'user', content: 'hi' }] });

describe('model policy', () => {
  it('a group whose allow-list excludes a model: 400 naming the group, and /v1/models omits it', async () => {
    const dev = await memberWithKey('contractor@policy.test');
    const group = (await admin('/rbac_groups', { name: 'Contractors' })).body;
    await admin(`/rbac_groups/${group.id}/members`, { user_id: dev.memberId });
    // Warm the key before the policy exists: the change must reach the cached key.
    expect((await ask(dev.client, 'claude-opus-4-5')).type).toBe('message');
    const set = await admin('/model_policies', {
      scope: { type: 'rbac_group', rbac_group_id: group.id },
      allowed_models: ['claude-haiku-*', 'claude-sonnet-4-5'],
      max_tokens: null,
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      scope: { type: 'rbac_group', rbac_group_id: group.id },
      allowed_models: ['claude-haiku-*', 'claude-sonnet-4-5'],
    });

    const refused = await waitFor(
      () =>
        ask(dev.client, 'claude-opus-4-5').then(
          () => null,
          (e: unknown) => e,
        ),
      { timeout: 2_000, what: 'the policy to reach the cached key' },
    );
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    const err = refused as InstanceType<typeof Anthropic.BadRequestError>;
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect((err.error as { error: { message: string } }).error.message).toBe(
      `model: 'claude-opus-4-5' is not allowed by the model policy of group 'Contractors' (${group.id}), which allows claude-haiku-*, claude-sonnet-4-5.`,
    );
    expect(err.requestID).toMatch(/^req_/);
    // Family patterns and exact ids pass.
    expect((await ask(dev.client, 'claude-haiku-4-5')).type).toBe('message');
    expect((await ask(dev.client, 'claude-sonnet-4-5')).type).toBe('message');
    await expect(ask(dev.client, 'claude-sonnet-4-6')).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    // Each request of a message batch is held to it, naming its index.
    await expect(
      dev.client.messages.batches.create({
        requests: [
          {
            custom_id: 'a',
            params: {
              model: 'claude-haiku-4-5',
              max_tokens: 16,
              messages: [{ role: 'user', content: 'hi' }],
            },
          },
          {
            custom_id: 'b',
            params: { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
          },
        ],
      }),
    ).rejects.toThrow(
      /requests\[1\]\.params\.model: 'claude-opus-4-5' is not allowed by the model policy of group 'Contractors'/,
    );
    // count_tokens is held to the allow-list too.
    await expect(
      dev.client.messages.countTokens({
        model: 'claude-opus-4-5',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);

    const listed: string[] = [];
    for await (const m of dev.client.models.list({ limit: 1000 })) listed.push(m.id);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((id) => id.startsWith('claude-haiku-') || id === 'claude-sonnet-4-5')).toBe(true);
    expect(listed).toContain('claude-haiku-4-5-20251001');
    expect(listed).not.toContain('claude-opus-4-5-20251101');
    await expect(dev.client.models.retrieve('claude-opus-4-5-20251101')).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    expect((await dev.client.models.retrieve('claude-haiku-4-5-20251001')).id).toBe(
      'claude-haiku-4-5-20251001',
    );

    // Another member of the account, in no group, still sees and calls every model.
    const other = await memberWithKey('staff@policy.test');
    expect((await ask(other.client, 'claude-opus-4-5')).type).toBe('message');
    const all: string[] = [];
    for await (const m of other.client.models.list({ limit: 1000 })) all.push(m.id);
    expect(all).toContain('claude-opus-4-5-20251101');
  });

  it('a group from the identity provider: membership through idp_groups carries its policy', async () => {
    const dev = await memberWithKey('idp-dev@policy.test');
    await stack.gateway.store.db.sql`update members set idp_groups = '{interns}' where id = ${dev.memberId}`;
    const group = (await admin('/rbac_groups', { name: 'Interns', idp_group: 'interns' })).body;
    await admin('/model_policies', {
      scope: { type: 'rbac_group', rbac_group_id: group.id },
      allowed_models: ['claude-haiku-*'],
      max_tokens: null,
    });
    await expect(ask(dev.client, 'claude-sonnet-4-5')).rejects.toThrow(/group 'Interns'/);
  });

  it('a max_tokens ceiling on a key, and the strictest ceiling names its rule', async () => {
    const dev = await memberWithKey('ceiling@policy.test');
    await admin('/model_policies', {
      scope: { type: 'user', user_id: dev.memberId },
      allowed_models: null,
      max_tokens: 2048,
    });
    await admin('/model_policies', {
      scope: { type: 'api_key', api_key_id: dev.keyId },
      allowed_models: null,
      max_tokens: 512,
    });
    const err = await waitFor(
      () =>
        ask(dev.client, 'claude-haiku-4-5', 1000).then(
          () => null,
          (e: unknown) => e,
        ),
      {
        timeout: 2_000,
        what: 'the ceiling to apply',
      },
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as Error).message).toContain(
      `max_tokens: 1000 is above the ceiling of 512 set by the model policy of key 'ceiling@policy.test' (${dev.keyId}).`,
    );
    // Once the ceiling applies, a refused call never reaches the provider. (Counted from here:
    // while the policy was on its way, a try could still pass.)
    const before = upstreamCalls();
    await expect(ask(dev.client, 'claude-haiku-4-5', 1000)).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    expect(upstreamCalls()).toBe(before);
    expect((await ask(dev.client, 'claude-haiku-4-5', 512)).type).toBe('message');
    // Removing the key's rule leaves the member's.
    await admin('/model_policies', { scope: { type: 'api_key', api_key_id: dev.keyId } }, 'DELETE');
    await waitFor(
      () =>
        ask(dev.client, 'claude-haiku-4-5', 1000).then(
          (m) => m.type === 'message',
          () => false,
        ),
      {
        timeout: 2_000,
        what: 'the removal to apply',
      },
    );
    await expect(ask(dev.client, 'claude-haiku-4-5', 4096)).rejects.toThrow(
      /ceiling of 2048 set by the model policy of member 'ceiling@policy.test'/,
    );
  });

  it('bad policies are refused in the provider error shape', async () => {
    const bad = await admin('/model_policies', {
      scope: { type: 'organization' },
      allowed_models: ['claude opus'],
      max_tokens: null,
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const missing = await admin('/model_policies', {
      scope: { type: 'rbac_group', rbac_group_id: 'rbacgrp_nope' },
      allowed_models: [],
      max_tokens: null,
    });
    expect(missing.status).toBe(404);
    const zero = await admin('/model_policies', {
      scope: { type: 'organization' },
      allowed_models: null,
      max_tokens: 0,
    });
    expect(zero.status).toBe(400);
  });
});

describe('spend limits at admission', () => {
  it("past a member's limit: 429 billing_error with x-should-retry false; count_tokens still answers", async () => {
    const dev = await memberWithKey('spent@policy.test');
    const set = await admin('/spend_limits', {
      scope: { type: 'user', user_id: dev.memberId },
      amount: '0',
      period: 'daily',
    });
    expect(set.status).toBe(200);
    const raw = await waitFor(
      async () => {
        const res = await fetch(`${url()}/v1/messages`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${(dev.client as unknown as { apiKey: string }).apiKey}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({
            model: 'claude-haiku-4-5',
            max_tokens: 16,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        });
        return res.status === 429 ? res : null;
      },
      { timeout: 2_000, what: 'the limit to apply' },
    );
    expect(raw.headers.get('x-should-retry')).toBe('false');
    expect(raw.headers.get('retry-after')).toBeNull();
    const body = (await raw.json()) as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
    expect(body.error.message).toContain(set.body.id);
    // The SDK does not retry it (x-should-retry: false), and sees the 429.
    const retrying = new Anthropic({
      apiKey: (dev.client as unknown as { apiKey: string }).apiKey,
      baseURL: url(),
      maxRetries: 3,
    });
    await expect(ask(retrying, 'claude-haiku-4-5')).rejects.toMatchObject({ status: 429 });
    const counted = await dev.client.messages.countTokens({
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });
});
