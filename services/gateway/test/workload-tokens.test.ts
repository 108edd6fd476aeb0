import Anthropic from '@anthropic-ai/sdk';
import { oidcFederationProvider } from '@anthropic-ai/sdk/lib/credentials/oidc-federation';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { runKeygate } from './cli-runner';
import { waitFor } from './kit/wait';
import { githubClaims, kubernetesClaims, startLocalIssuer, type LocalIssuer } from './workload-issuer';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

let stack: Stack;
let issuer: LocalIssuer;
let account: SeededAccount;
// The gateway's clock: moved forward to see a minted token expire, never slept on.
let skew = 0;
const now = () => Date.now() + skew;

beforeAll(async () => {
  stack = await startStack({ KEYGATE_EGRESS_ALLOW: '127.0.0.1' }, { clock: now });
  issuer = await startLocalIssuer();
  account = await stack.seedAccount();
});
afterAll(async () => {
  await issuer?.close();
  await stack?.close();
});

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: account.adminKey, ...(body ? { body } : {}) });

/** The token endpoint, as a form (RFC 7523 §2.1) unless `json` is set (the provider's SDK). */
async function exchange(fields: Record<string, string>, opts: { json?: boolean; base?: string } = {}) {
  const body = { grant_type: JWT_BEARER, organization_id: account.id, ...fields };
  const res = await fetch(`${opts.base ?? stack.gateway.url}/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': opts.json ? 'application/json' : 'application/x-www-form-urlencoded' },
    body: opts.json ? JSON.stringify(body) : new URLSearchParams(body).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
}

let n = 0;
/** A service account, an issuer and a rule binding the issuer's matching tokens to the account. */
async function federate(issuerUrl: string, jwks: object, match: object, rule: object = {}) {
  n++;
  const svc = await admin('/service_accounts', { name: `workload-${n}` });
  expect(svc.status).toBe(200);
  const iss = await admin('/federation_issuers', { name: `issuer-${n}`, issuer_url: issuerUrl, jwks });
  expect(iss.status, JSON.stringify(iss.body)).toBe(200);
  const r = await admin('/federation_rules', {
    name: `rule-${n}`,
    issuer_id: iss.body.id,
    match,
    target: { type: 'service_account', service_account_id: svc.body.id },
    ...rule,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { svc: svc.body, issuer: iss.body, rule: r.body };
}

/** The GitHub-like issuer (discovery) and a rule binding `main` of acme/app. */
const githubSetup = (match: object = {}, rule: object = {}) =>
  federate(
    issuer.github,
    { type: 'discovery' },
    {
      audience: 'https://keygate.test',
      subject_prefix: 'repo:acme/app:ref:refs/heads/main',
      claims: { repository_owner: 'acme' },
      ...match,
    },
    rule,
  );

const mintedKeys = (ruleId: string) =>
  stack.gateway.store.db.sql<{ id: string; service_account_id: string; expires_at: Date }[]>`
    select id, service_account_id, expires_at from api_keys where federation_rule_id = ${ruleId} order by created_at`;

describe('workload tokens: a signed JWT from a registered issuer becomes a short-lived key of a service account', () => {
  it('GitHub Actions-like token: exchanged, calls /v1/messages, in the call log as the service account', async () => {
    const { svc, issuer: iss, rule } = await githubSetup({}, { token_lifetime_seconds: 900 });
    expect(iss).toMatchObject({ type: 'federation_issuer', issuer_url: issuer.github, check_jti: true });
    expect(rule).toMatchObject({
      type: 'federation_rule',
      issuer_id: iss.id,
      target: { type: 'service_account', service_account_id: svc.id, service_account_name: svc.name },
      token_lifetime_seconds: 900,
      enabled: true,
    });
    const assertion = await issuer.sign(issuer.github, githubClaims(now()));
    const res = await exchange({ assertion, federation_rule_id: rule.id });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^kg_live_/),
      token_type: 'Bearer',
      expires_in: expect.any(Number),
    });
    // Never past the assertion (exp 300 s after iat), though the rule allows 900.
    expect(res.body.expires_in).toBeGreaterThan(250);
    expect(res.body.expires_in).toBeLessThanOrEqual(300);

    const call = await callModel(stack.gateway.url, res.body.access_token);
    expect(call.status, JSON.stringify(call.body)).toBe(200);
    const [key] = await mintedKeys(rule.id);
    expect(key!.service_account_id).toBe(svc.id);
    expect(key!.expires_at.getTime() - now()).toBeLessThanOrEqual(300_000);
    await stack.gateway.writer.flush();
    const calls = await stack.gateway.store.db.sql`
      select key_id, app, status from calls where account_id = ${account.id} and key_id = ${key!.id}`;
    expect(calls).toEqual([{ key_id: key!.id, app: svc.name, status: 200 }]);
    // One key per exchange: the key list leaves them out.
    const listed = await admin('/api_keys?limit=1000');
    expect(listed.body.data.map((k: { id: string }) => k.id)).not.toContain(key!.id);
    const audit = await stack.gateway.store.db.sql<{ action: string }[]>`
      select action from audit_log where account_id = ${account.id} and target_id in (${iss.id}, ${rule.id}, ${key!.id})
      order by created_at`;
    expect(audit.map((a) => a.action)).toEqual([
      'federation_issuer.create',
      'federation_rule.create',
      'federation.token_mint',
    ]);
  });

  it('Kubernetes-like token (explicit key-set URL, ES256, JSON body): exchanged and used', async () => {
    await federate(
      issuer.kubernetes,
      { type: 'explicit_url', url: issuer.kubernetesJwks },
      { subject_prefix: 'system:serviceaccount:ci:*' },
    );
    const assertion = await issuer.sign(issuer.kubernetes, kubernetesClaims(now()));
    const res = await exchange({ assertion }, { json: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await callModel(stack.gateway.url, res.body.access_token)).status).toBe(200);
    const other = await issuer.sign(
      issuer.kubernetes,
      kubernetesClaims(now(), { sub: 'system:serviceaccount:prod:builder' }),
    );
    expect((await exchange({ assertion: other })).body.error).toBe('invalid_grant');
  });

  it("refuses what is not a valid assertion for the rule, in OAuth's error shape", async () => {
    const { rule } = await githubSetup();
    const t = now();
    const refused = async (
      assertion: string,
      error = 'invalid_grant',
      fields: Record<string, string> = {},
    ) => {
      const res = await exchange({ assertion, federation_rule_id: rule.id, ...fields });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toEqual({ error, error_description: expect.any(String) });
      return res.body.error_description as string;
    };
    const expired = githubClaims(t - 3_600_000);
    expect(await refused(await issuer.sign(issuer.github, expired))).toMatch(/expired/);
    expect(
      await refused(await issuer.sign(issuer.github, githubClaims(t, { aud: 'https://elsewhere.test' }))),
    ).toMatch(/does not match/);
    // Another issuer's URL: no rule takes it.
    expect(await refused(await issuer.sign(`${issuer.github}-other`, githubClaims(t)))).toMatch(
      /No federation rule/,
    );
    const forged = await issuer.stranger('RS256', 'gh-1');
    expect(await refused(await issuer.sign(issuer.github, githubClaims(t), { key: forged }))).toMatch(
      /signature/,
    );
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ iss: issuer.github, ...githubClaims(t) })}.`;
    expect(await refused(none)).toMatch(/algorithm/);
    const hs = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iss: issuer.github, ...githubClaims(t) })}.c2ln`;
    expect(await refused(hs)).toMatch(/algorithm/);
    const long = githubClaims(t, { exp: Math.floor(t / 1000) + 7200 });
    expect(await refused(await issuer.sign(issuer.github, long))).toMatch(/lifetime/);
    expect(
      await refused(
        await issuer.sign(
          issuer.github,
          githubClaims(t, { ref: 'refs/heads/dev', sub: 'repo:acme/app:ref:refs/heads/dev' }),
        ),
      ),
    ).toMatch(/does not match/);
    // The same assertion (same jti) twice: the second is a replay.
    const once = await issuer.sign(issuer.github, githubClaims(t));
    expect((await exchange({ assertion: once, federation_rule_id: rule.id })).status).toBe(200);
    expect(await refused(once)).toMatch(/already used/);
    expect(await refused(once, 'unsupported_grant_type', { grant_type: 'client_credentials' })).toMatch(
      /jwt-bearer/,
    );
    expect(await refused('', 'invalid_request')).toBeTruthy();
  });

  it('an issuer whose key set the egress policy blocks: refused without fetching', async () => {
    await federate(
      'https://internal.example/issuer',
      { type: 'explicit_url', url: 'http://10.255.255.1/jwks' },
      { subject_prefix: 'repo:acme/app:ref:refs/heads/main' },
    );
    const assertion = await issuer.sign('https://internal.example/issuer', githubClaims(now()));
    const res = await exchange({ assertion });
    expect(res.body).toEqual({
      error: 'invalid_grant',
      error_description: "The issuer's signing keys could not be fetched.",
    });
  });

  it('a rule edited so the workload no longer matches: exchange refused, its tokens refused here and on a peer', async () => {
    const { rule } = await githubSetup();
    const peer = await stack.startPeer();
    const res = await exchange({
      assertion: await issuer.sign(issuer.github, githubClaims(now())),
      federation_rule_id: rule.id,
    });
    const token = res.body.access_token as string;
    expect((await callModel(peer.url, token)).status).toBe(200);
    expect((await callModel(stack.gateway.url, token)).status).toBe(200);

    const edited = await admin(`/federation_rules/${rule.id}`, {
      match: { subject_prefix: 'repo:acme/app:ref:refs/heads/release' },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    const at = Date.now();
    expect((await callModel(stack.gateway.url, token)).status).toBe(401);
    await waitFor(async () => (await callModel(peer.url, token)).status === 401, {
      timeout: 1_000,
      what: 'the peer refusing the ended token',
    });
    expect(Date.now() - at).toBeLessThan(1_000);
    const again = await exchange({
      assertion: await issuer.sign(issuer.github, githubClaims(now())),
      federation_rule_id: rule.id,
    });
    expect(again.body.error).toBe('invalid_grant');
  });

  it('a minted token is refused once expired, and once its rule is archived', async () => {
    const { rule, issuer: iss } = await githubSetup({}, { token_lifetime_seconds: 60 });
    const mint = async () =>
      (
        await exchange({
          assertion: await issuer.sign(issuer.github, githubClaims(now())),
          federation_rule_id: rule.id,
        })
      ).body as { access_token: string; expires_in: number };
    const first = await mint();
    expect(first.expires_in).toBe(60);
    expect((await callModel(stack.gateway.url, first.access_token)).status).toBe(200);
    skew += 61_000;
    try {
      const late = await callModel(stack.gateway.url, first.access_token);
      expect(late.status).toBe(401);
      expect(late.body.error.message).toMatch(/expired/);
    } finally {
      skew -= 61_000;
    }

    const second = await mint();
    expect((await callModel(stack.gateway.url, second.access_token)).status).toBe(200);
    expect((await admin(`/federation_issuers/${iss.id}/archive`, {})).status).toBe(400);
    const archived = await admin(`/federation_rules/${rule.id}/archive`, {});
    expect(archived.body.archived_at).toEqual(expect.any(String));
    expect((await callModel(stack.gateway.url, second.access_token)).status).toBe(401);
    const res = await exchange({
      assertion: await issuer.sign(issuer.github, githubClaims(now())),
      federation_rule_id: rule.id,
    });
    expect(res.body.error).toBe('invalid_grant');
    expect((await admin(`/federation_issuers/${iss.id}/archive`, {})).status).toBe(200);
  });

  it('a rotated signing key is fetched again; an unknown kid does not refetch on every assertion', async () => {
    const { rule } = await githubSetup();
    const assertion = async () => issuer.sign(issuer.github, githubClaims(now()));
    expect((await exchange({ assertion: await assertion(), federation_rule_id: rule.id })).status).toBe(200);
    await issuer.rotateGithub();
    const before = issuer.fetches.github;
    // Just fetched: a new kid at once is refused, not fetched for (a forged kid cannot drive fetches).
    expect((await exchange({ assertion: await assertion(), federation_rule_id: rule.id })).body.error).toBe(
      'invalid_grant',
    );
    expect(issuer.fetches.github).toBe(before);
    skew += 31_000;
    try {
      const res = await exchange({ assertion: await assertion(), federation_rule_id: rule.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(issuer.fetches.github).toBe(before + 1);
    } finally {
      skew -= 31_000;
    }
  });

  it('admin API: validation, 404s, and a rule matching on audience alone is refused', async () => {
    const svc = await admin('/service_accounts', { name: 'validation' });
    const iss = await admin('/federation_issuers', { name: 'v-issuer', issuer_url: issuer.github });
    expect(iss.body.jwks).toEqual({ type: 'discovery' });
    const bare = await admin('/federation_rules', {
      name: 'too-wide',
      issuer_id: iss.body.id,
      match: { audience: 'https://keygate.test' },
      target: { type: 'service_account', service_account_id: svc.body.id },
    });
    expect(bare.status).toBe(400);
    expect(bare.body.error.type).toBe('invalid_request_error');
    expect((await admin('/federation_rules/fdrl_nothing')).status).toBe(404);
    expect((await admin('/federation_issuers', { name: 'v-issuer', issuer_url: 'x' })).status).toBe(409);
    const list = await admin('/federation_issuers?limit=100');
    expect(list.body.data.map((i: { id: string }) => i.id)).toContain(iss.body.id);
    // Another account's admin key sees none of it.
    const other = await stack.seedAccount();
    const foreign = await api(stack.gateway.url, `/v1/organizations/federation_issuers/${iss.body.id}`, {
      key: other.adminKey,
    });
    expect(foreign.status).toBe(404);
  });

  it('keygate federation …: issuer and rule from the CLI; --disable ends the tokens the rule minted', async () => {
    const svc = await admin('/service_accounts', { name: 'cli-deploy' });
    const cli = async (...args: string[]) => {
      const run = await runKeygate(stack, ['federation', ...args, '--account', account.id, '--json']);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout);
    };
    const iss = await cli('add-issuer', '--name', 'cli-github', '--issuer-url', issuer.github);
    expect(iss).toMatchObject({ type: 'federation_issuer', jwks: { type: 'discovery' } });
    const rule = await cli(
      'add-rule',
      '--name',
      'cli-main',
      '--issuer',
      iss.id,
      '--service-account',
      svc.body.id,
      '--subject',
      'repo:acme/app:*',
      '--claim',
      'repository_owner=acme',
      '--audience',
      'https://keygate.test',
      '--lifetime',
      '120',
    );
    expect(rule.match).toEqual({
      subject_prefix: 'repo:acme/app:*',
      audience: 'https://keygate.test',
      claims: { repository_owner: 'acme' },
    });
    expect((await cli('rules', '--issuer', iss.id)).data.map((r: { id: string }) => r.id)).toEqual([rule.id]);
    const res = await exchange({
      assertion: await issuer.sign(issuer.github, githubClaims(now())),
      federation_rule_id: rule.id,
    });
    expect(res.body.expires_in).toBe(120);
    expect((await callModel(stack.gateway.url, res.body.access_token)).status).toBe(200);
    expect((await cli('update-rule', rule.id, '--disable')).enabled).toBe(false);
    // The CLI changed the database itself: the gateway hears it through the invalidation channel.
    await waitFor(async () => (await callModel(stack.gateway.url, res.body.access_token)).status === 401, {
      timeout: 1_000,
      what: "the gateway refusing the disabled rule's token",
    });
  });

  it("one client address is limited before its body is read; the refusal is in OAuth's shape", async () => {
    // A loopback address of its own, so no other test's exchanges count.
    const dispatcher = new Agent({ localAddress: '127.0.0.77' });
    const post = (body: string) =>
      undiciFetch(`${stack.gateway.url}/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
        dispatcher,
      });
    try {
      for (let i = 0; i < 60; i++) expect((await post('grant_type=password')).status).toBe(400);
      const limited = await post('grant_type=password');
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await limited.json()).toEqual({
        error: 'slow_down',
        error_description: expect.stringMatching(/Too many/),
      });
      const big = await post(`assertion=${'a'.repeat(40_000)}`);
      expect(big.status).toBe(429);
    } finally {
      await dispatcher.close();
    }
    const tooLarge = await fetch(`${stack.gateway.url}/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `assertion=${'a'.repeat(40_000)}`,
    });
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { error: string }).error).toBe('invalid_request');
  });

  it("a workload token is under its service account's model policy", async () => {
    const { svc, rule } = await githubSetup();
    const policy = await admin('/model_policies', {
      scope: { type: 'service_account', service_account_id: svc.id },
      allowed_models: ['claude-haiku-*'],
      max_tokens: null,
    });
    expect(policy.status, JSON.stringify(policy.body)).toBe(200);
    expect(policy.body.scope).toEqual({ type: 'service_account', service_account_id: svc.id });
    const res = await exchange({
      assertion: await issuer.sign(issuer.github, githubClaims(now())),
      federation_rule_id: rule.id,
    });
    const refused = await callModel(stack.gateway.url, res.body.access_token);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error.message).toContain(`service account '${svc.name}'`);
    const haiku = await api(stack.gateway.url, '/v1/messages', {
      bearer: res.body.access_token,
      body: { model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(haiku.status, JSON.stringify(haiku.body)).toBe(200);
  });

  it("the provider's SDK exchanges through Keygate with its own WIF credential provider (no key anywhere)", async () => {
    const { rule, svc } = await githubSetup();
    const client = new Anthropic({
      baseURL: stack.gateway.url,
      maxRetries: 0,
      credentials: oidcFederationProvider({
        identityTokenProvider: () => issuer.sign(issuer.github, githubClaims(now())),
        federationRuleId: rule.id,
        organizationId: account.id,
        baseURL: stack.gateway.url,
        fetch,
      }),
    });
    const msg = await client.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(msg.type).toBe('message');
    const [key] = await mintedKeys(rule.id);
    expect(key!.service_account_id).toBe(svc.id);
  });

  it('an issuer whose key set cannot be fetched is asked again only after a pause', async () => {
    const { rule } = await federate(
      `${issuer.github}-gone`,
      { type: 'explicit_url', url: issuer.missingJwks },
      { subject_prefix: 'repo:acme/app:*' },
    );
    const attempt = async () =>
      exchange({
        assertion: await issuer.sign(`${issuer.github}-gone`, githubClaims(now())),
        federation_rule_id: rule.id,
      });
    const before = issuer.fetches.missing;
    for (let i = 0; i < 3; i++)
      expect((await attempt()).body.error_description).toBe(
        "The issuer's signing keys could not be fetched.",
      );
    expect(issuer.fetches.missing).toBe(before + 1);
    skew += 31_000;
    try {
      expect((await attempt()).body.error).toBe('invalid_grant');
      expect(issuer.fetches.missing).toBe(before + 2);
    } finally {
      skew -= 31_000;
    }
  });

  it('a new key source for the issuer ends the tokens minted on the old one', async () => {
    const { rule, issuer: iss } = await githubSetup();
    const res = await exchange({
      assertion: await issuer.sign(issuer.github, githubClaims(now())),
      federation_rule_id: rule.id,
    });
    expect((await callModel(stack.gateway.url, res.body.access_token)).status).toBe(200);
    const moved = await admin(`/federation_issuers/${iss.id}`, {
      jwks: { type: 'explicit_url', url: issuer.kubernetesJwks },
    });
    expect(moved.body.jwks).toEqual({ type: 'explicit_url', url: issuer.kubernetesJwks });
    expect((await callModel(stack.gateway.url, res.body.access_token)).status).toBe(401);
    const audit = await stack.gateway.store.db.sql<{ action: string }[]>`
      select action from audit_log where target_id = ${iss.id} order by created_at`;
    expect(audit.map((a) => a.action)).toEqual(['federation_issuer.create', 'federation_issuer.update']);
  });
});
