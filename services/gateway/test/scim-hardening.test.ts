import { describe, expect, it } from 'vitest';
import { createKey } from '../src/accounts/service';
import { useScimAccount } from './scim-fixture';
import { waitFor } from './kit/wait';

const ctx = useScimAccount();
const { scim } = ctx;

const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${ctx.stack.gateway.url}/v1/organizations${path}`, {
    method,
    headers: { 'x-api-key': ctx.account.adminKey, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
/** The status of a call to the account API with this admin key (401 once it is refused). */
const adminKeyStatus = (key: string) =>
  fetch(`${ctx.stack.gateway.url}/v1/organizations/me`, { headers: { 'x-api-key': key } }).then(
    (r) => r.status,
  );
const patchActive = (id: string, value: unknown) =>
  scim('PATCH', `/Users/${id}`, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'replace', path: 'active', value }],
  });
const auditOf = (id: string) => ctx.stack.gateway.store.db.sql`
  select actor, action, details from audit_log where account_id = ${ctx.account.id} and target_id = ${id} order by seq`;

describe('SCIM hardening (issue 29)', () => {
  it('a member an admin removed stays removed: SCIM active=true is refused and their admin key stays revoked', async () => {
    const added = await admin('POST', '/users', { email: 'root2@acme.test', role: 'admin' });
    expect(added.status).toBe(201);
    const id = ((await added.json()) as any).id;
    const { secret } = await createKey(ctx.stack.deps, {
      accountId: ctx.account.id,
      kind: 'admin',
      memberId: id,
    });
    expect(await adminKeyStatus(secret)).toBe(200);
    expect((await admin('DELETE', `/users/${id}`)).status).toBe(200);
    await waitFor(async () => (await adminKeyStatus(secret)) === 401 || null, {
      timeout: 5_000,
      what: 'the removed admin key refused',
    });

    const revived = await patchActive(id, true);
    expect(revived.status).toBe(400);
    expect(revived.type).toBe('application/scim+json');
    expect(revived.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      scimType: 'mutability',
      detail:
        'This user was removed by an account admin and cannot be reactivated through SCIM: an admin adds them again.',
      status: '400',
    });
    expect((await scim('GET', `/Users/${id}`)).body.active).toBe(false);
    expect(await adminKeyStatus(secret)).toBe(401);
  });

  it('SCIM deactivation, reactivation and email changes each leave an audit entry', async () => {
    const id = (await scim('POST', '/Users', { userName: 'jo@acme.test', displayName: 'Jo' })).body.id;
    expect((await patchActive(id, false)).body.active).toBe(false);
    expect((await patchActive(id, 'True')).body.active).toBe(true);
    const renamed = await scim('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'userName', value: 'jo.new@acme.test' }],
    });
    expect(renamed.body.userName).toBe('jo.new@acme.test');
    expect((await auditOf(id)).map((a) => [a.actor, a.action, a.details])).toEqual([
      ['scim', 'member.deprovisioned', { reason: 'SCIM: active=false' }],
      ['scim', 'member.reactivated', null],
      ['scim', 'member.email_changed', { from: 'jo@acme.test', to: 'jo.new@acme.test' }],
    ]);
  });

  it("never deprovisions the account's last active admin", async () => {
    const other = await ctx.stack.seedAccount();
    const res = await fetch(`${ctx.stack.gateway.url}/v1/organizations/scim_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': other.adminKey },
    });
    const otherToken = ((await res.json()) as any).token;
    const off = await fetch(`${ctx.stack.gateway.url}/scim/v2/Users/${other.adminMemberId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${otherToken}` },
    });
    expect(off.status).toBe(400);
    expect(await off.json()).toMatchObject({ scimType: 'mutability', status: '400' });
    expect(await adminKeyStatus(other.adminKey)).toBe(200);
  });

  it('a NUL character anywhere is a SCIM 400, never a 500', async () => {
    const filter = await fetch(`${ctx.stack.gateway.url}/scim/v2/Users?filter=userName%20eq%20%22a%00b%22`, {
      headers: { authorization: `Bearer ${ctx.token}` },
    });
    expect(filter.status).toBe(400);
    expect(await filter.json()).toMatchObject({ scimType: 'invalidFilter', status: '400' });
    const path = await scim('GET', '/Users/%00');
    expect(path.status).toBe(400);
    expect(path.body).toMatchObject({ scimType: 'invalidValue', status: '400' });
    const body = await scim('POST', '/Users', { userName: 'nul\u0000@acme.test' });
    expect(body.status).toBe(400);
    expect(body.type).toBe('application/scim+json');
    expect(body.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      scimType: 'invalidValue',
      status: '400',
    });
    const group = await scim('POST', '/Groups', { displayName: 'g\u0000' });
    expect(group.status).toBe(400);
  });
});
