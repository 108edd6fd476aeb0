import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { createKey } from '../src/accounts/service';
import { useScimAccount } from './scim-fixture';
import { waitFor } from './kit/wait';

const ctx = useScimAccount();
const { scim } = ctx;

const call = (key: string) =>
  new Anthropic({ baseURL: ctx.stack.gateway.url, apiKey: key, maxRetries: 0 }).messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'hi' }],
  });

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('SCIM 2.0 Users and Groups (RFC 7643/7644)', () => {
  it('creates a user in the core User shape, finds it by userName, refuses a duplicate', async () => {
    const created = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'Erin@Acme.test',
      externalId: '00u-erin',
      name: { givenName: 'Erin', familyName: 'Example' },
      emails: [{ value: 'erin@acme.test', primary: true }],
      active: true,
    });
    expect(created.status).toBe(201);
    expect(created.type).toBe('application/scim+json');
    const id = created.body.id;
    expect(created.body).toEqual({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      id,
      externalId: '00u-erin',
      userName: 'erin@acme.test',
      name: { formatted: 'Erin Example' },
      displayName: 'Erin Example',
      emails: [{ value: 'erin@acme.test', type: 'work', primary: true }],
      active: true,
      groups: [],
      meta: {
        resourceType: 'User',
        created: expect.any(String),
        lastModified: expect.any(String),
        location: `${ctx.stack.gateway.url}/scim/v2/Users/${id}`,
      },
    });
    const found = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "erin@acme.test"')}`);
    expect(found.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 1,
      startIndex: 1,
      itemsPerPage: 1,
    });
    expect(found.body.Resources[0].id).toBe(id);
    const dup = await scim('POST', '/Users', { userName: 'erin@acme.test' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      scimType: 'uniqueness',
      detail: "A member with userName 'erin@acme.test' exists.",
      status: '409',
    });
    const badFilter = await scim('GET', `/Users?filter=${encodeURIComponent('emails co "x"')}`);
    expect(badFilter.status).toBe(400);
    expect(badFilter.body.scimType).toBe('invalidFilter');
    expect((await scim('GET', '/Users/user_nope')).status).toBe(404);
  });

  it('PATCH active=false deprovisions at once: the member key is refused, and active=true restores the seat', async () => {
    const created = await scim('POST', '/Users', { userName: 'frank@acme.test', displayName: 'Frank' });
    const id = created.body.id;
    const { secret } = await createKey(ctx.stack.deps, {
      accountId: ctx.account.id,
      kind: 'live',
      memberId: id,
    });
    expect((await call(secret)).type).toBe('message');

    const off = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [{ op: 'replace', path: 'active', value: false }],
    });
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    const refused = await waitFor(
      () =>
        call(secret).then(
          () => null,
          (err: { status?: number }) => err,
        ),
      { timeout: 5_000, what: 'the key refused' },
    );
    expect(refused.status).toBe(401);
    const [audit] = await ctx.stack.gateway.store.db.sql`
      select actor, details from audit_log where account_id = ${ctx.account.id} and action = 'member.deprovisioned' and target_id = ${id}`;
    expect(audit).toMatchObject({ actor: 'scim', details: { reason: 'SCIM: active=false' } });

    // Azure's form: no path, the value an object, booleans as strings.
    const on = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [{ op: 'Replace', value: { active: 'True' } }],
    });
    expect(on.body.active).toBe(true);
    // The key's cached refusal ends when the reactivation's invalidation reaches this instance.
    const served = await waitFor(
      () =>
        call(secret).then(
          (m) => m,
          () => null,
        ),
      { timeout: 5_000, what: 'the key served again' },
    );
    expect(served.type).toBe('message');

    expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
    expect((await scim('GET', `/Users/${id}`)).body.active).toBe(false);
  });

  it('Groups: create with members, add and remove, and the members carry the group names as their groups claim', async () => {
    const a = (await scim('POST', '/Users', { userName: 'gina@acme.test' })).body.id;
    const b = (await scim('POST', '/Users', { userName: 'hal@acme.test' })).body.id;
    const g = await scim('POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'claude-users',
      members: [{ value: a }],
    });
    expect(g.status).toBe(201);
    expect(g.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'claude-users',
      members: [{ value: a, $ref: `${ctx.stack.gateway.url}/scim/v2/Users/${a}`, type: 'User' }],
      meta: { resourceType: 'Group', location: `${ctx.stack.gateway.url}/scim/v2/Groups/${g.body.id}` },
    });
    const groups = async (id: string) =>
      (await ctx.stack.gateway.store.db.sql`select idp_groups from members where id = ${id}`)[0]!.idp_groups;
    expect(await groups(a)).toEqual(['claude-users']);

    const patched = await scim('PATCH', `/Groups/${g.body.id}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'add', path: 'members', value: [{ value: b }] },
        { op: 'remove', path: `members[value eq "${a}"]` },
      ],
    });
    expect(patched.body.members.map((m: { value: string }) => m.value)).toEqual([b]);
    expect(await groups(a)).toEqual([]);
    expect(await groups(b)).toEqual(['claude-users']);
    expect((await scim('GET', `/Users/${b}`)).body.groups).toEqual([
      {
        value: g.body.id,
        display: 'claude-users',
        $ref: `${ctx.stack.gateway.url}/scim/v2/Groups/${g.body.id}`,
      },
    ]);
    const byName = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "claude-users"')}`);
    expect(byName.body.totalResults).toBe(1);
    expect((await scim('POST', '/Groups', { displayName: 'Claude-Users' })).status).toBe(409);
    expect((await scim('DELETE', `/Groups/${g.body.id}`)).status).toBe(204);
    expect(await groups(b)).toEqual([]);
  });

  it('refuses a missing, wrong or revoked token in the SCIM error shape, and another account never sees these users', async () => {
    const none = await scim('GET', '/Users', undefined, '');
    expect(none.status).toBe(401);
    expect(none.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
    expect((await scim('GET', '/Users', undefined, 'kgscim_wrong')).status).toBe(401);
    // An admin key is not a SCIM token.
    expect((await scim('GET', '/Users', undefined, ctx.account.adminKey)).status).toBe(401);

    const other = await ctx.stack.seedAccount();
    const res = await fetch(`${ctx.stack.gateway.url}/v1/organizations/scim_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': other.adminKey },
    });
    const { token: otherToken, id: otherId } = (await res.json()) as any;
    const list = await scim('GET', '/Users?count=200', undefined, otherToken);
    expect(list.body.Resources.map((u: { userName: string }) => u.userName)).toEqual([
      expect.stringMatching(/^admin-\w+@example\.com$/),
    ]);
    const revoke = await fetch(`${ctx.stack.gateway.url}/v1/organizations/scim_tokens/${otherId}`, {
      method: 'DELETE',
      headers: { 'x-api-key': other.adminKey },
    });
    expect(revoke.status).toBe(200);
    expect((await scim('GET', '/Users', undefined, otherToken)).status).toBe(401);
  });

  it('refuses a body over the limit with 413 in the SCIM error shape, declared or streamed, and the connection stays readable', async () => {
    const big = JSON.stringify({ userName: 'big@acme.test', padding: 'a'.repeat(1024 * 1024) });
    const declared = await scim('POST', '/Users', JSON.parse(big));
    expect(declared.status).toBe(413);
    expect(declared.type).toBe('application/scim+json');
    expect(declared.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '413',
      detail: expect.stringMatching(/at most 1048576 bytes/),
    });
    // No content-length: the limit is met while reading.
    const chunks = [Buffer.from(big.slice(0, 1000)), Buffer.from(big.slice(1000))];
    const streamed = await fetch(`${ctx.stack.gateway.url}/scim/v2/Users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/scim+json' },
      body: new ReadableStream({
        pull(ctl) {
          const next = chunks.shift();
          if (next) ctl.enqueue(next);
          else ctl.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await streamed.json()).toMatchObject({
      status: '413',
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    });
    // Nothing of the refused bodies was created.
    const found = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "big@acme.test"')}`);
    expect(found.body.totalResults).toBe(0);
  });

  it('refuses JSON nested past the bound with 400 invalidSyntax in the SCIM error shape', async () => {
    const res = await fetch(`${ctx.stack.gateway.url}/scim/v2/Users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/scim+json' },
      body: `{"userName":${'['.repeat(100_000)}`,
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/scim+json');
    expect(await res.json()).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '400',
      scimType: 'invalidSyntax',
      detail: expect.stringMatching(/deeper than 256 levels/),
    });
  });
});
