import Anthropic from '@anthropic-ai/sdk';
import Anthropic20230601 from '@anthropic-ai/sdk-2023-06-01';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RENAMED, reshape } from '../src/account-api/api-version';
import { ACCOUNT_API } from '../src/pipeline/endpoint-paths';
import { startStack, type SeededAccount, type Stack } from './harness';

/**
 * Issue 31 item 3: the organization and analytics APIs answer in the shape of the version the
 * client sent (account-api/api-version.ts). The official SDK's 0.x sends 2023-06-01 and calls
 * the organization API under `client.beta.organization` (`?beta=true`); its 1.x sends 2026-10-21
 * from `client.organization`. Both work against Keygate unchanged, and on every GET route of the
 * account API the 2026-10-21 answer is the 2023-06-01 one in the shape RENAMED gives.
 */
let stack: Stack;
let acme: SeededAccount;
beforeAll(async () => {
  stack = await startStack();
  acme = await stack.seedAccount({ name: 'Versions' });
}, 60_000);
afterAll(() => stack?.close());

async function all<T>(page: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of page) out.push(item);
  return out;
}

describe('the organization API under both API versions', () => {
  it("the 0.x SDK's beta organization client (2023-06-01, ?beta=true) and the 1.x one (2026-10-21) get the same objects", async () => {
    const old = new Anthropic20230601({ apiKey: acme.adminKey, baseURL: stack.gateway.url, maxRetries: 0 });
    const now = new Anthropic({ apiKey: acme.adminKey, baseURL: stack.gateway.url, maxRetries: 0 });

    expect(await old.beta.organization.retrieve()).toEqual(await now.organization.retrieve());
    const users = await all(old.beta.organization.users.list());
    expect(users.map((u) => u.id)).toContain(acme.adminMemberId);
    expect(await old.beta.organization.users.retrieve(acme.adminMemberId)).toEqual(
      await now.organization.users.retrieve(acme.adminMemberId),
    );

    const keys = await all(old.beta.organization.apiKeys.list());
    expect(keys.map((k) => k.id)).toContain(acme.adminKeyId);
    const renamed = await old.beta.organization.apiKeys.update(acme.adminKeyId, { name: 'renamed by 0.x' });
    expect(renamed).toMatchObject({ id: acme.adminKeyId, name: 'renamed by 0.x' });
    // Each call uses the admin key, so its last use moves between the two reads.
    // (Keygate's key adds last_used_at to the SDK's APIKey.)
    const withoutUse = (k: object) => ({ ...k, last_used_at: undefined });
    const viaNew = withoutUse(await now.organization.apiKeys.retrieve(acme.adminKeyId));
    const viaOld = withoutUse(await old.beta.organization.apiKeys.retrieve(acme.adminKeyId));
    expect(viaNew).toEqual(viaOld);

    const invite = await old.beta.organization.invites.create({
      email: 'old.sdk@versions.test',
      role: 'developer',
    });
    expect(invite).toMatchObject({ type: 'invite', email: 'old.sdk@versions.test', status: 'pending' });
    expect(await now.organization.invites.retrieve(invite.id)).toEqual(invite);
    expect((await all(old.beta.organization.invites.list())).map((i) => i.id)).toContain(invite.id);
    expect(await old.beta.organization.invites.delete(invite.id)).toEqual({
      id: invite.id,
      type: 'invite_deleted',
    });
  });

  it('every GET route without a path parameter: the 2026-10-21 answer is the 2023-06-01 one as RENAMED shapes it', async () => {
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const routes = ACCOUNT_API.filter((r) => r.startsWith('GET ') && !r.includes(':')).map((r) => r.slice(4));
    expect(routes.length).toBeGreaterThan(30);
    // Request ids and clocks differ between two answers (the admin key's last use among them); nothing else may.
    const steady = (v: unknown): unknown =>
      JSON.parse(
        JSON.stringify(v, (k, x) =>
          k === 'request_id' || k === 'last_used_at' || /refreshed_at|generated_at|as_of|^now$/.test(k)
            ? undefined
            : x,
        ),
      );
    const answer = async (path: string, version: string) => {
      // The reports need a start; every other route takes none.
      const query = /report|analytics/.test(path) ? `?starting_at=${day}T00:00:00Z` : '';
      const res = await fetch(`${stack.gateway.url}/v1/organizations${path}${query}`, {
        headers: {
          'x-api-key': acme.adminKey,
          'anthropic-version': version,
          'anthropic-beta': 'analytics-usage-cost-2026-08-24',
        },
      });
      const type = res.headers.get('content-type') ?? '';
      return {
        status: res.status,
        body: type.includes('json') ? steady(await res.json()) : await res.text(),
      };
    };
    const served: string[] = [];
    for (const path of routes) {
      const old = await answer(path, '2023-06-01');
      const now = await answer(path, '2026-10-21');
      expect(now.status, path).toBe(old.status);
      expect(now.body, path).toEqual(
        typeof old.body === 'string' ? old.body : reshape(old.body, RENAMED['2026-10-21']),
      );
      if (old.status === 200) served.push(path);
    }
    // Most routes answer 200 to the shared query; the rest refuse it alike under both versions.
    expect(served).toEqual(
      expect.arrayContaining(['/me', '/users', '/api_keys', '/invites', '/rbac_groups']),
    );
  });
});
