import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIdpStack } from './idp-fixture';

const ctx = useIdpStack();
let adminEmail: string;

beforeAll(async () => {
  const [row] = await ctx.stack.gateway.store.db
    .sql`select email from members where id = ${ctx.account.adminMemberId}`;
  adminEmail = row!.email as string;
});

const sql = () => ctx.stack.gateway.store.db.sql;
const sessionsOf = async (memberId: string) =>
  (await sql()`select kind from dashboard_sessions where member_id = ${memberId}`).map((r) => r.kind);

/** A dashboard sign-in as `login`; the alert it ends on, or null when it opened a session. */
async function signInRefusal(login: string): Promise<string | null> {
  const { context, page } = await ctx.dashboardSignIn(login);
  try {
    const alert = page.getByRole('alert');
    await Promise.race([alert.waitFor(), page.waitForURL(`${ctx.stack.gateway.url}/dashboard`)]);
    return (await alert.count()) ? await alert.textContent() : null;
  } finally {
    await context.close();
  }
}

describe('company sign-in cannot take over a member by email (issue 29, finding 4)', () => {
  it("a second identity carrying the admin's email gets no admin session", { timeout: 120_000 }, async () => {
    expect((await ctx.connect({ allowed_domains: [] })).status).toBe(200);
    // No email_verified at all: never links to anyone.
    ctx.idp.people.set('eve', {
      email: adminEmail,
      name: 'Eve',
      groups: [],
      claims: { email_verified: undefined },
    });
    expect(await signInRefusal('eve')).toContain('did not assert that this address is verified');
    expect(await sessionsOf(ctx.account.adminMemberId)).toEqual([]);
    // Verified, but the account does not allow linking existing members (the default).
    ctx.idp.people.set('eve2', { email: adminEmail, name: 'Eve', groups: [] });
    expect(await signInRefusal('eve2')).toContain('has not signed in with this identity provider before');
    expect(await sessionsOf(ctx.account.adminMemberId)).toEqual([]);
    // email_verified must be the JSON boolean: the string "true" is not an assertion.
    ctx.idp.people.set('stringy', {
      email: 'stringy@acme.test',
      name: 'S',
      groups: [],
      claims: { email_verified: 'true' },
    });
    expect(await signInRefusal('stringy')).toContain('did not give a verified email address');
    expect((await sql()`select 1 from members where email = 'stringy@acme.test'`).length).toBe(0);

    // Linking allowed: the first verified sign-in binds the admin; nobody else can take it after.
    expect((await ctx.connect({ allowed_domains: [], link_existing_members: true })).status).toBe(200);
    ctx.idp.people.set('boss', { email: adminEmail, name: 'Boss', groups: [] });
    expect(await signInRefusal('boss')).toBeNull();
    expect(await sessionsOf(ctx.account.adminMemberId)).toEqual(['admin']);
    expect(await signInRefusal('eve2')).toContain('already linked to another person');
    expect(await sessionsOf(ctx.account.adminMemberId)).toEqual(['admin']);
    const [bound] =
      await sql()`select idp_issuer, idp_subject from members where id = ${ctx.account.adminMemberId}`;
    expect(bound).toEqual({ idp_issuer: ctx.idp.issuer, idp_subject: 'boss' });
    const linked = await sql()`
      select actor, details from audit_log where account_id = ${ctx.account.id} and action = 'member.linked'`;
    expect(linked.map((a) => [a.actor, a.details.subject])).toEqual([['idp', 'boss']]);
  });

  it("a member the provider's SCIM client created is bound at its first verified sign-in (linking off)", {
    timeout: 60_000,
  }, async () => {
    expect((await ctx.connect()).status).toBe(200);
    const made = await fetch(`${ctx.stack.gateway.url}/v1/organizations/scim_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': ctx.account.adminKey },
    });
    const scimToken = ((await made.json()) as any).token;
    const created = await fetch(`${ctx.stack.gateway.url}/scim/v2/Users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
      body: JSON.stringify({ userName: 'sam@acme.test', externalId: '00u-sam' }),
    });
    const id = ((await created.json()) as any).id;
    ctx.idp.people.set('sam', { email: 'sam@acme.test', name: 'Sam', groups: [] });
    expect(await signInRefusal('sam')).toBeNull();
    expect(await sessionsOf(id)).toEqual(['member']);
    const [row] = await sql()`select idp_subject, scim_external_id from members where id = ${id}`;
    expect(row).toEqual({ idp_subject: 'sam', scim_external_id: '00u-sam' });
  });
});

describe('the authorization endpoint a browser is sent to (issue 29, finding 10)', () => {
  let server: Server;
  let origin: string;
  let authorizationEndpoint = '';
  beforeAll(async () => {
    // A provider whose discovery document names an authorization endpoint of the test's choosing.
    server = createServer((req, res) => {
      if (req.url !== '/.well-known/openid-configuration') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          issuer: origin,
          authorization_endpoint: authorizationEndpoint,
          token_endpoint: `${origin}/token`,
          jwks_uri: `${origin}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('must pass the egress policy and be https: otherwise no redirect', async () => {
    const other = await ctx.stack.seedAccount();
    const startSignIn = async (endpoint: string) => {
      authorizationEndpoint = endpoint;
      const saved = await fetch(`${ctx.stack.gateway.url}/v1/organizations/identity_provider`, {
        method: 'POST',
        headers: { 'x-api-key': other.adminKey, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Odd', issuer: origin, client_id: 'k', client_secret: 'secret-secret' }),
      });
      expect(saved.status).toBe(200);
      return fetch(`${ctx.stack.gateway.url}/dashboard/sign-in/idp?account=${other.id}`, {
        redirect: 'manual',
      });
    };
    for (const endpoint of [
      'http://169.254.169.254/latest/meta-data',
      'http://93.184.215.14/authorize',
      'javascript:alert(1)',
    ]) {
      const res = await startSignIn(endpoint);
      expect(res.status, endpoint).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('authorization endpoint is not allowed');
    }
    // https on a public address, or plain http on a host the operator allowed (the test provider): sent there.
    const ok = await startSignIn('https://93.184.215.14/authorize');
    expect(ok.status).toBe(302);
    expect(ok.headers.get('location')).toMatch(/^https:\/\/93\.184\.215\.14\/authorize\?/);
    const lab = await startSignIn(`${origin}/authorize`);
    expect(lab.status).toBe(302);
  });
});
