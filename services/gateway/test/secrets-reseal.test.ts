import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resealSecrets } from '../src/accounts/reseal';
import { SecretBox } from '../src/lib/secret-box';
import { sealV1 } from './kit/legacy-seal';
import { callModel, PROVIDER_KEY, startStack, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

describe('secrets sealed by an earlier version', () => {
  it('stay readable, and the start-up step re-seals them bound to their row and purpose', async () => {
    const sql = stack.gateway.store.db.sql;
    const acct = await stack.seedAccount();
    const whk = `whk_${randomBytes(6).toString('hex')}`;
    await sql`update accounts set provider_key_sealed = ${sealV1(stack.config.secret!, PROVIDER_KEY)} where id = ${acct.id}`;
    await sql`insert into webhook_endpoints (id, account_id, url, secret_sealed, events, status)
              values (${whk}, ${acct.id}, 'https://93.184.215.14/', ${sealV1(stack.config.secret!, 'whsec_old')}, '{billing.notice}', 'active')`;
    const resealed = await resealSecrets(stack.gateway.store, stack.deps.box);
    expect(resealed).toBeGreaterThanOrEqual(2);
    const [a] = await sql`select provider_key_sealed as s from accounts where id = ${acct.id}`;
    const [w] = await sql`select secret_sealed as s from webhook_endpoints where id = ${whk}`;
    expect(a!.s).toMatch(/^v2\./);
    expect(w!.s).toMatch(/^v2\./);
    expect(stack.deps.box.open(a!.s, { purpose: 'provider-key', row: acct.id })).toBe(PROVIDER_KEY);
    expect(stack.deps.box.open(w!.s, { purpose: 'webhook-secret', row: whk })).toBe('whsec_old');
    // Bound to its row: another account's sealed key pasted here does not open.
    expect(() => stack.deps.box.open(a!.s, { purpose: 'provider-key', row: stack.account.id })).toThrow();
    // Nothing left to do on the next start.
    expect(await resealSecrets(stack.gateway.store, stack.deps.box)).toBe(0);
    // The re-sealed provider key serves calls.
    const key = await stack.newKey();
    expect((await callModel(stack.gateway.url, key.secret)).status).toBe(200);
  });

  it('a weak secret replaced by a strong one: KEYGATE_SECRET_PREVIOUS opens the old values once', async () => {
    const weak = 'short-old-secret';
    const strong = randomBytes(32).toString('base64url');
    const sealed = sealV1(weak, 'sk-ant-api03-from-the-weak-days');
    const box = new SecretBox(strong, { previous: weak });
    expect(box.open(sealed, { purpose: 'provider-key', row: 'acct_x' })).toBe(
      'sk-ant-api03-from-the-weak-days',
    );
    expect(() => new SecretBox(strong).open(sealed, { purpose: 'provider-key', row: 'acct_x' })).toThrow();
    expect(() => new SecretBox(weak)).toThrow(/KEYGATE_SECRET is too weak/);
  });
});
