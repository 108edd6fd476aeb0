import { randomBytes } from 'node:crypto';
import { Agent } from 'undici';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/resolver';
import { SecretBox } from '../lib/secret-box';
import { UpstreamDirectory } from './directory';
import type { UpstreamRow } from './queries';

const box = new SecretBox(randomBytes(32).toString('base64url'));
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

function bedrock(accountId: string): UpstreamRow {
  return {
    id: 'ups_1',
    accountId,
    position: 0,
    kind: 'bedrock',
    baseUrl: 'https://bedrock.example.test',
    auth: 'bearer',
    credentialSealed: box.seal('bedrock-api-key-for-test', { purpose: 'upstream-credential', row: 'ups_1' }),
    credentialHint: '…test',
    workspaceId: null,
    region: 'us-east-1',
    modelMap: {},
    refusedBetas: [],
    refusedFields: [],
    createdAt: new Date(0),
  } as UpstreamRow;
}

/** A principal as the resolver makes one: a new object each time a key is read again. */
const principalOf = (accountId: string) =>
  ({ account: { id: accountId }, providerKey: 'sk-provider-key-for-test' }) as unknown as Principal;

function directory(
  list: (accountId: string) => Promise<UpstreamRow[]>,
  get: (accountId: string, id: string) => Promise<UpstreamRow | null> = async () => null,
) {
  const dispatcher = new Agent();
  return new UpstreamDirectory({
    queries: { list, get },
    box,
    providerUrl: 'https://provider.example.test',
    providerDispatcher: dispatcher,
    egressDispatcher: dispatcher,
  });
}

describe('the upstream directory while the database is away', () => {
  it("keeps serving an account's upstreams as last read to keys read again in the outage", async () => {
    let down = false;
    let reads = 0;
    const dir = directory(async (id) => {
      reads++;
      if (down) throw refused();
      return [bedrock(id)];
    });
    const before = await dir.chainFor(principalOf('acct_a'));
    down = true;
    const during = await dir.chainFor(principalOf('acct_a'));
    expect(reads).toBe(2);
    // Provider key first, then the account's Bedrock upstream, exactly as before the outage.
    expect(during?.next?.origin).toBe(before?.next?.origin);
    expect(during?.next?.origin).toBe('https://bedrock.example.test');
    expect(during?.providerKey).toBe(true);
  });

  it('answers an account never read with the outage itself (the caller turns it into the retryable 503)', async () => {
    const dir = directory(async () => {
      throw refused();
    });
    await expect(dir.chainFor(principalOf('acct_b'))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('does not hide a query that failed for another reason', async () => {
    let fail = false;
    const dir = directory(async (id) => {
      if (fail) throw Object.assign(new Error('column "kind" does not exist'), { code: '42703' });
      return [bedrock(id)];
    });
    await dir.chainFor(principalOf('acct_c'));
    fail = true;
    await expect(dir.chainFor(principalOf('acct_c'))).rejects.toMatchObject({ code: '42703' });
  });
});

describe('one upstream by id (where a message batch made there is read)', () => {
  it('is that upstream alone, with its own credential and no other after it, even with a provider key', async () => {
    const dir = directory(
      async () => [],
      async (accountId, id) => (id === 'ups_1' ? bedrock(accountId) : null),
    );
    const one = await dir.one('acct_d', 'ups_1');
    expect(one).toMatchObject({ label: 'ups_1', providerKey: false, next: null });
    expect(one?.origin).toBe('https://bedrock.example.test');
    const out = await one!.request({
      req: { headers: { 'anthropic-version': '2023-06-01' }, method: 'GET' },
      path: '/v1/messages/batches/msgbatch_1',
      body: null,
      model: null,
    });
    expect(out.headers.authorization).toBe('Bearer bedrock-api-key-for-test');
  });

  it('is null once the account no longer has it: nothing stands in for it', async () => {
    const dir = directory(async (id) => [bedrock(id)]);
    expect(await dir.one('acct_e', 'ups_gone')).toBeNull();
  });
});
