import { startCloudEmulator, type CloudEmulator } from '@keygate/emulator';
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api } from './harness';
import { upstreamSuite } from './kit/upstream-suite';

/**
 * The Anthropic-operated Google Cloud upstream with a service-account key (issue 31): the
 * gateway mints access tokens from it against the key's token_uri (the emulator plays Google's
 * token endpoint and accepts only the tokens it issued), re-mints on a 401, fails over when it
 * cannot mint, and never shows or logs the key.
 */
const pair = () =>
  generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
const registered = pair();
const EMAIL = 'keygate-gw@example-project.iam.gserviceaccount.com';
const FOUNDRY_KEY = 'foundry-key-google-suite-0123456789';

const { suite, op } = upstreamSuite();
const { clouds } = suite;
const message = { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] };
const call = () =>
  api(suite.stack.gateway.url, '/v1/messages', { bearer: suite.stack.appKey, body: message });

async function googleCloud(): Promise<CloudEmulator> {
  const c = await startCloudEmulator({
    kind: 'google',
    auth: { type: 'google-service-account', clientEmail: EMAIL, publicKey: registered.publicKey },
  });
  clouds.push(c);
  return c;
}

function keyFile(c: CloudEmulator, privateKey = registered.privateKey): string {
  return JSON.stringify({
    type: 'service_account',
    project_id: 'example-project',
    private_key_id: 'kid-0001',
    private_key: privateKey,
    client_email: EMAIL,
    token_uri: c.tokenUri,
  });
}

async function addGoogle(c: CloudEmulator, privateKey?: string) {
  return op('/upstreams', {
    kind: 'google',
    base_url: c.baseUrl,
    auth: 'google-service-account',
    credential: keyFile(c, privateKey),
  });
}

describe('Google Cloud upstream with a service-account key', () => {
  it('serves calls with a minted token, minted once and reused', async () => {
    const g = await googleCloud();
    const added = await addGoogle(g);
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body).toMatchObject({ auth: 'google-service-account', credential_hint: EMAIL });
    const before = (await suite.stack.calls()).length;
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    expect(g.minted).toBe(1);
    const served = g.received.filter((r) => r.path === '/v1/messages');
    expect(served.map((r) => r.refused)).toEqual([null, null]);
    expect(served[0]!.headers.authorization).toMatch(/^Bearer ya29\.emu-/);
    const rows = (await suite.stack.calls()).slice(before);
    expect(rows.map((r) => r.upstream)).toEqual([added.body.id, added.body.id]);
  });

  it('a token the upstream no longer takes (expired): one 401, a new token, the call served', async () => {
    const g = await googleCloud();
    expect((await addGoogle(g)).status).toBe(200);
    expect((await call()).status).toBe(200);
    g.expireTokens();
    const before = (await suite.stack.calls()).length;
    const res = await call();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(g.minted).toBe(2);
    const last = g.received.filter((r) => r.path === '/v1/messages').slice(-2);
    expect(last.map((r) => r.refused)).toEqual(['invalid credentials', null]);
    // Recorded once, by the answer the client got.
    expect((await suite.stack.calls()).slice(before)).toHaveLength(1);
  });

  it('a 401 to a fresh token is the answer: the token is refreshed once, not again and again', async () => {
    const g = await googleCloud();
    expect((await addGoogle(g)).status).toBe(200);
    g.fault = 'unauthorized';
    const before = (await suite.stack.calls()).length;
    const res = await call();
    expect(res.status).toBe(401);
    expect(res.body.error.type).toBe('authentication_error');
    expect(g.minted).toBe(2);
    expect(g.received.filter((r) => r.path === '/v1/messages')).toHaveLength(2);
    expect((await suite.stack.calls()).slice(before)).toHaveLength(1);
  });

  it('a key the service account lacks: a clear 502 in the provider shape, or the next upstream serves', async () => {
    const g = await googleCloud();
    const stranger = pair();
    const bad = await addGoogle(g, stranger.privateKey);
    expect(bad.status).toBe(200);
    const alone = await call();
    expect(alone.status).toBe(502);
    expect(alone.body).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(alone.body.error.message).toBe(
      `The account's upstream ${bad.body.id} could not be called: ${g.tokenUri} refused ${EMAIL} ` +
        '(400 invalid_grant: Invalid JWT Signature.). An account admin fixes its credential.',
    );
    expect(g.received.filter((r) => r.path === '/v1/messages')).toHaveLength(0);

    const foundry = await startCloudEmulator({
      kind: 'foundry',
      auth: { type: 'x-api-key', key: FOUNDRY_KEY },
    });
    clouds.push(foundry);
    const next = await op('/upstreams', {
      kind: 'foundry',
      base_url: foundry.baseUrl,
      auth: 'x-api-key',
      credential: FOUNDRY_KEY,
    });
    const before = (await suite.stack.calls()).length;
    const res = await call();
    expect(res.status).toBe(200);
    const rows = (await suite.stack.calls()).slice(before);
    expect(rows.map((r) => r.upstream)).toEqual([next.body.id]);
    expect(suite.stack.logs.some((l) => l.includes('upstream failed over') && l.includes(bad.body.id))).toBe(
      true,
    );
  });

  it('refuses a key that cannot mint when added, and never shows or logs the key', async () => {
    const g = await googleCloud();
    const notJson = await op('/upstreams', {
      kind: 'google',
      base_url: g.baseUrl,
      auth: 'google-service-account',
      credential: registered.privateKey,
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.message).toMatch(/^credential: a Google service-account key is JSON/);
    const junkKey = await addGoogle(g, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----');
    expect(junkKey.status).toBe(400);
    const blockedUri = await op('/upstreams', {
      kind: 'google',
      base_url: g.baseUrl,
      auth: 'google-service-account',
      credential: keyFile(g).replace(g.tokenUri, 'http://10.0.0.1/token'),
    });
    expect(blockedUri.status).toBe(400);
    expect(blockedUri.body.error.message).toContain('egress policy');
    const wrongAuth = await op('/upstreams', {
      kind: 'foundry',
      base_url: g.baseUrl,
      auth: 'google-service-account',
      credential: keyFile(g),
    });
    expect(wrongAuth.status).toBe(400);
    const ok = await addGoogle(g);
    expect((await call()).status).toBe(200);
    const listed = await op('/upstreams');
    const seen =
      JSON.stringify([notJson.body, junkKey.body, blockedUri.body, wrongAuth.body, ok.body, listed.body]) +
      suite.stack.logs.join('\n');
    const body = registered.privateKey.split('\n')[1]!;
    expect(seen).not.toContain(body);
    expect(seen).not.toContain('PRIVATE KEY');
    // Nor the minted token.
    const token = g.received.at(-1)!.headers.authorization!.slice(7);
    expect(seen).not.toContain(token);
  });
});
