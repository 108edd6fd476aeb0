import { beforeAll, describe, expect, it } from 'vitest';
import { api } from './harness';
import { runKeygate } from './cli-runner';
import { baseFor, prepareAccount } from './claude-gateway';
import { useIdpStack } from './idp-fixture';
import { waitFor } from './kit/wait';

// The gateway sign-in protocol as Claude Code speaks it (form-encoded OAuth, bearer afterwards),
// from a plain HTTP client: each answer's shape and each refusal.
const ctx = useIdpStack();
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
let base: string;

beforeAll(async () => {
  await prepareAccount(ctx, { KEYGATE_TEAM: 'platform' });
  base = baseFor(ctx);
});

const form = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

/** The device flow as Claude Code runs it, the person approving at the IdP as `login`. */
async function signIn(login: string) {
  const meta = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as any;
  const device = (await (
    await form(meta.device_authorization_endpoint, { surface: 'claude_code' })
  ).json()) as any;
  const pending = await form(meta.token_endpoint, {
    grant_type: DEVICE_GRANT,
    device_code: device.device_code,
  });
  expect(pending.status).toBe(400);
  // Polled at once: pending, or slow_down (Keygate paces polls to the interval before asking the IdP).
  expect(['authorization_pending', 'slow_down']).toContain(((await pending.json()) as any).error);
  await ctx.approveDevice(device.verification_uri_complete, login);
  // Polled at the interval, 5 s more after each slow_down (RFC 8628 §3.5), as Claude Code polls.
  let pace = (device.interval + 5) * 1000;
  let last = Date.now();
  const res = await waitFor(
    async () => {
      if (Date.now() - last < pace) return null;
      last = Date.now();
      const r = await form(meta.token_endpoint, {
        grant_type: DEVICE_GRANT,
        device_code: device.device_code,
      });
      if (r.status === 200) return r;
      if (((await r.json()) as any).error === 'slow_down') pace += 5000;
      return null;
    },
    { timeout: 45_000, interval: 250, what: 'the approved device grant' },
  );
  return (await res.json()) as {
    access_token: string;
    refresh_token: string;
    expires_in: number;
    token_type: string;
  };
}

describe('the gateway sign-in protocol at {gateway}/claude/{account}', () => {
  it('discovery names same-origin endpoints under the base and the device grant, no authorization endpoint', async () => {
    const res = await fetch(`${base}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as any;
    expect(meta).toMatchObject({
      issuer: base,
      device_authorization_endpoint: `${base}/oauth/device_authorization`,
      token_endpoint: `${base}/oauth/token`,
      grant_types_supported: [DEVICE_GRANT, 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
    });
    expect(meta.authorization_endpoint).toBeUndefined();
  });

  it('issues a member token bound to the member and a key, rotates refresh tokens, and pushes settings with ETag/304', {
    timeout: 60_000,
  }, async () => {
    const tokens = await signIn('carol');
    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.refresh_token).toMatch(/^kgr_/);
    const bearer = { authorization: `Bearer ${tokens.access_token}` };

    const settings = await fetch(`${base}/managed/settings`, { headers: bearer });
    expect(settings.status).toBe(200);
    const body = (await settings.json()) as any;
    expect(settings.headers.get('etag')).toBe(`"${body.checksum}"`);
    expect(body.settings.env).toMatchObject({
      CLAUDE_CODE_ENABLE_TELEMETRY: '1',
      OTEL_EXPORTER_OTLP_ENDPOINT: base,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      ENABLE_TOOL_SEARCH: 'true',
      KEYGATE_TEAM: 'platform',
    });
    // carol is not in the Engineering group: no model policy, so no availableModels.
    expect(body.settings.availableModels).toBeUndefined();
    const again = await fetch(`${base}/managed/settings`, {
      headers: { ...bearer, 'if-none-match': settings.headers.get('etag')! },
    });
    expect(again.status).toBe(304);

    // A call under the base goes through the gateway's own route with its own bounds (the OAuth
    // endpoints' small form bound is theirs only), attributed to the member's token key.
    const call = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x'.repeat(40_000) }],
      }),
    });
    expect(call.status, await call.clone().text()).toBe(200);
    expect(call.headers.get('cache-control')).not.toBe('no-store');

    // Traces are taken and dropped with a 200, as the protocol asks.
    const traces = await fetch(`${base}/v1/traces`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/x-protobuf' },
      body: new Uint8Array(0),
    });
    expect(traces.status).toBe(200);

    // Refresh: a new pair; the spent refresh token presented again later ends the sign-in (401 invalid_grant).
    const refreshed = await form(`${base}/oauth/token`, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as any;
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    // Within 30 s (a second window renewing with the same token) it gets the same pair again.
    const racing = await form(`${base}/oauth/token`, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(racing.status).toBe(200);
    expect(await racing.json()).toMatchObject({
      access_token: next.access_token,
      refresh_token: next.refresh_token,
    });
    // Later, the spent token ends the sign-in.
    await ctx.stack.gateway.store.db
      .sql`update idp_refresh_spent set spent_at = spent_at - interval '31 seconds'`;
    const replay = await form(`${base}/oauth/token`, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
    expect(replay.headers.get('cache-control')).toBe('no-store');
  });

  it("refuses another account's credential at this base, and speaks OAuth's errors on the OAuth endpoints", async () => {
    const other = await ctx.stack.seedAccount({ name: 'Other' });
    const key = await ctx.stack.newKey({ kind: 'live' });
    const foreign = await fetch(`${base}/managed/settings`, {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(foreign.status).toBe(401);
    expect(((await foreign.json()) as any).error.message).toMatch(/another account/);
    const none = await fetch(`${base}/v1/messages`, { method: 'POST', body: '{}' });
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).type).toBe('error');

    const grant = await form(`${base}/oauth/token`, { grant_type: 'password' });
    expect(grant.status).toBe(400);
    expect(await grant.json()).toMatchObject({ error: 'unsupported_grant_type' });
    const unknown = await form(`${base}/oauth/token`, {
      grant_type: 'refresh_token',
      refresh_token: 'kgr_nope',
    });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_grant' });
    // An account without an identity provider has no sign-in to offer.
    const noIdp = await form(`${ctx.stack.gateway.url}/claude/${other.id}/oauth/device_authorization`, {});
    expect(noIdp.status).toBe(400);
    expect(await noIdp.json()).toMatchObject({ error: 'invalid_request' });
  });

  it("takes the admin's environment through the account API, refusing what would move Claude Code off the gateway", async () => {
    const set = (env: object) =>
      api(ctx.stack.gateway.url, '/v1/organizations/claude_code_env', {
        key: ctx.account.adminKey,
        body: { env },
      });
    const bad = await set({ ANTHROPIC_BASE_URL: 'https://elsewhere.test' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/set by the gateway sign-in/);
    const ok = await set({ KEYGATE_TEAM: 'platform', OTEL_LOGS_EXPORT_INTERVAL: '1000' });
    expect(ok.body).toEqual({
      type: 'claude_code_env',
      env: { KEYGATE_TEAM: 'platform', OTEL_LOGS_EXPORT_INTERVAL: '1000' },
    });
    const read = await api(ctx.stack.gateway.url, '/v1/organizations/claude_code_env', {
      key: ctx.account.adminKey,
    });
    expect(read.body.env.OTEL_LOGS_EXPORT_INTERVAL).toBe('1000');

    // The same from the CLI (the operator's face of the account API).
    const account = ['claude-code', 'env', '--account', ctx.account.id];
    const cli = await runKeygate(ctx.stack, [...account, '--set', 'TEAM=a=b', '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual({ type: 'claude_code_env', env: { TEAM: 'a=b' } });
    const shown = await runKeygate(ctx.stack, account);
    expect(shown.stdout).toMatch(/TEAM\s+a=b/);
    const cleared = await runKeygate(ctx.stack, [...account, '--clear', '--json']);
    expect(JSON.parse(cleared.stdout).env).toEqual({});
    const badPair = await runKeygate(ctx.stack, [...account, '--set', 'NOEQUALS']);
    expect(badPair.code).not.toBe(0);
    expect(badPair.stderr).toMatch(/NAME=VALUE/);
  });
});
