import { startCloudEmulator, type CloudEmulator } from '@keygate/emulator';
import { generateKeyPairSync } from 'node:crypto';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPrivateKey, GoogleTokenSource, parseServiceAccount, TokenMintError } from './google-token';

/** Minting against the emulator's token endpoint on loopback, with the clock in the test's hand. */
const pair = () =>
  generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
const registered = pair();
const EMAIL = 'keygate-test@example-project.iam.gserviceaccount.com';
const dispatcher = new Agent();
let cloud: CloudEmulator;

const account = (privateKey = registered.privateKey, tokenUri = () => cloud.tokenUri) => ({
  type: 'service_account' as const,
  client_email: EMAIL,
  private_key: privateKey,
  private_key_id: 'kid-1',
  token_uri: tokenUri(),
});

beforeAll(async () => {
  cloud = await startCloudEmulator({
    kind: 'google',
    auth: {
      type: 'google-service-account',
      clientEmail: EMAIL,
      publicKey: registered.publicKey,
      tokenTtlSeconds: 100,
    },
  });
});
afterAll(async () => {
  await cloud.close();
  await dispatcher.close();
});

describe('GoogleTokenSource', () => {
  it('mints once, keeps the token until shortly before expiry, then mints again', async () => {
    let now = Date.now();
    const source = new GoogleTokenSource(account(), dispatcher, () => now);
    const before = cloud.minted;
    const [a, b] = await Promise.all([source.token(), source.token()]);
    expect(a).toMatch(/^ya29\.emu-/);
    expect(b).toBe(a);
    expect(cloud.minted - before).toBe(1);
    now += 49_000;
    expect(source.token()).toBe(a);
    // 100 s tokens are used for 50 s at most (half their life, or all but a minute).
    now += 2_000;
    const c = await source.token();
    expect(c).not.toBe(a);
    expect(cloud.minted - before).toBe(2);
  });

  it('a dropped token is minted again; another token is not dropped by mistake', async () => {
    const source = new GoogleTokenSource(account(), dispatcher);
    const a = await source.token();
    source.drop('ya29.some-other-token');
    expect(source.token()).toBe(a);
    source.drop(a);
    expect(await source.token()).not.toBe(a);
  });

  it('a key the service account does not have: the token endpoint refuses it, the error names why, not the key', async () => {
    const stranger = pair();
    const source = new GoogleTokenSource(account(stranger.privateKey), dispatcher);
    const err = await Promise.resolve(source.token()).catch((e: Error) => e);
    expect(err).toBeInstanceOf(TokenMintError);
    expect((err as Error).message).toBe(
      `${cloud.tokenUri} refused ${EMAIL} (400 invalid_grant: Invalid JWT Signature.)`,
    );
    expect((err as Error).message).not.toContain('PRIVATE KEY');
  });

  it('an unreachable token endpoint is a mint error naming the endpoint', async () => {
    const source = new GoogleTokenSource(
      account(undefined, () => 'http://127.0.0.1:1/token'),
      dispatcher,
    );
    await expect(Promise.resolve(source.token())).rejects.toThrow(
      /^http:\/\/127\.0\.0\.1:1\/token could not be reached \(ECONNREFUSED\)$/,
    );
  });
});

describe('parseServiceAccount', () => {
  it('takes a service-account JSON key and names the first wrong field otherwise', async () => {
    const sa = account(registered.privateKey, () => 'https://oauth2.googleapis.com/token');
    expect(parseServiceAccount(JSON.stringify(sa))).toEqual(sa);
    expect(parseServiceAccount('not json')).toMatch(/^credential: a Google service-account key is JSON/);
    expect(parseServiceAccount(JSON.stringify({ ...sa, type: 'authorized_user' }))).toBe(
      'credential: type: must be "service_account"',
    );
    expect(parseServiceAccount(JSON.stringify({ ...sa, token_uri: 'ftp://x' }))).toBe(
      'credential: token_uri: must be an http:// or https:// URL',
    );
    const junk = {
      ...sa,
      private_key: `-----BEGIN PRIVATE KEY-----\n${'A'.repeat(80)}\n-----END PRIVATE KEY-----`,
    };
    expect(await checkPrivateKey(junk)).toBe('credential: private_key is not a PEM PKCS#8 RSA private key.');
    expect(await checkPrivateKey(sa)).toBeNull();
  });
});
