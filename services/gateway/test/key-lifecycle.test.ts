import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorRoutes } from '../src/operator/routes';
import type { Gateway } from '../src/server';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';

let stack: Stack;
let peer: Gateway;
let acme: SeededAccount;
const OPERATOR = 'operator-token-0123456789';
const keys = '/v1/organizations/api_keys';

beforeAll(async () => {
  stack = await startStack();
  peer = await stack.startPeer();
  acme = await stack.seedAccount({ name: 'Lifecycle' });
});
afterAll(() => stack?.close());

const newKey = async (body: object = {}) =>
  (await api(stack.gateway.url, keys, { key: acme.adminKey, body })).body;

/**
 * Warms `secret` in the peer's key cache, makes the change through the first instance, then
 * polls the peer every 10 ms: returns the milliseconds from the change's response to the
 * peer's first refusal.
 */
async function refusalDelay(
  secret: string,
  change: () => Promise<{ status: number }>,
  expectStatus = 401,
): Promise<number> {
  expect((await callModel(peer.url, secret)).status).toBe(200);
  expect((await callModel(peer.url, secret)).status).toBe(200);
  const res = await change();
  expect(res.status).toBeLessThan(300);
  const changedAt = performance.now();
  const refused = await waitFor(
    async () => {
      const call = await callModel(peer.url, secret);
      return call.status !== 200 && call;
    },
    { timeout: 5_000, interval: 10, what: 'the peer to refuse the key' },
  );
  expect(refused.status).toBe(expectStatus);
  return performance.now() - changedAt;
}

describe('changes take effect on every instance within one second', () => {
  it('a key revoked through one instance is refused by the other in < 1 s', async () => {
    const k = await newKey({ app: 'revoke-me' });
    const ms = await refusalDelay(k.key, () =>
      api(stack.gateway.url, `${keys}/${k.id}`, { key: acme.adminKey, body: { status: 'archived' } }),
    );
    expect(ms).toBeLessThan(1000);
  });

  it('deactivation and deletion too', async () => {
    const a = await newKey();
    expect(
      await refusalDelay(a.key, () =>
        api(stack.gateway.url, `${keys}/${a.id}`, { key: acme.adminKey, body: { status: 'inactive' } }),
      ),
    ).toBeLessThan(1000);
    const b = await newKey();
    expect(
      await refusalDelay(b.key, () =>
        api(stack.gateway.url, `${keys}/${b.id}`, { key: acme.adminKey, method: 'DELETE' }),
      ),
    ).toBeLessThan(1000);
  });

  it("a removed member's keys; their past usage stays attributed to them", async () => {
    const dev = (
      await api(stack.gateway.url, '/v1/organizations/users', {
        key: acme.adminKey,
        body: { email: 'leaver@acme.test' },
      })
    ).body;
    const k = await newKey({ member_id: dev.id });
    const ms = await refusalDelay(k.key, () =>
      api(stack.gateway.url, `/v1/organizations/users/${dev.id}`, { key: acme.adminKey, method: 'DELETE' }),
    );
    expect(ms).toBeLessThan(1000);
    expect((await callModel(peer.url, k.key)).body.error.message).toMatch(/member was removed/);
    await peer.writer.flush();
    const log = (
      await api(stack.gateway.url, `/v1/organizations/requests?user_id=${dev.id}&status=ok`, {
        key: acme.adminKey,
      })
    ).body;
    expect(log.data.length).toBeGreaterThanOrEqual(2);
    expect(log.data.every((r: any) => r.api_key_id === k.id)).toBe(true);
  });

  it('a suspended account gets 403 everywhere (suspended through the peer), and works again once reactivated', async () => {
    const acct = await stack.seedAccount();
    const k = (await api(stack.gateway.url, keys, { key: acct.adminKey, body: {} })).body;
    // This time the change goes through the peer and the first instance must notice.
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    const suspend = await api(peer.url, `/operator/v1/accounts/${acct.id}/suspend`, {
      bearer: OPERATOR,
      method: 'POST',
    });
    expect(suspend.body.status).toBe('suspended');
    const start = performance.now();
    const res = await waitFor(
      async () => {
        const call = await callModel(stack.gateway.url, k.key);
        return call.status !== 200 && call;
      },
      { timeout: 5_000, interval: 10, what: 'the suspension to reach the other instance' },
    );
    expect(performance.now() - start).toBeLessThan(1000);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({
      type: 'permission_error',
      message: expect.stringMatching(/suspended/),
    });
    expect((await api(stack.gateway.url, '/v1/organizations/me', { key: acct.adminKey })).status).toBe(403);
    await api(stack.gateway.url, `/operator/v1/accounts/${acct.id}/reactivate`, {
      bearer: OPERATOR,
      method: 'POST',
    });
    await waitFor(async () => (await callModel(peer.url, k.key)).status === 200, {
      timeout: 1_000,
      interval: 10,
      what: 'the reactivation to reach the peer',
    });
  });

  it('an expired key is refused on the dot, without any notification', async () => {
    const expiresAt = Date.now() + 1500;
    const k = await newKey({ expires_at: new Date(expiresAt).toISOString() });
    expect((await callModel(peer.url, k.key)).status).toBe(200);
    let servedAfterExpiry = false;
    const res = await waitFor(
      async () => {
        const sentAt = Date.now();
        const call = await callModel(peer.url, k.key);
        if (call.status === 200 && sentAt >= expiresAt) servedAfterExpiry = true;
        return call.status !== 200 && call;
      },
      { timeout: 3_000, interval: 25, what: 'the expired key to be refused' },
    );
    expect(servedAfterExpiry).toBe(false);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/expired/);
  });

  it('an admin key stops working when its member is no longer an admin', async () => {
    const boss = (
      await api(stack.gateway.url, '/v1/organizations/users', {
        key: acme.adminKey,
        body: { email: 'boss@acme.test', role: 'admin' },
      })
    ).body;
    const adminKey = await newKey({ kind: 'admin', member_id: boss.id });
    expect((await api(peer.url, '/v1/organizations/me', { key: adminKey.key })).status).toBe(200);
    await api(stack.gateway.url, `/v1/organizations/users/${boss.id}`, {
      key: acme.adminKey,
      body: { role: 'developer' },
    });
    const res = await waitFor(
      async () => {
        const me = await api(peer.url, '/v1/organizations/me', { key: adminKey.key });
        return me.status !== 200 && me;
      },
      { timeout: 1_000, interval: 10, what: 'the demotion to reach the peer' },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/no longer an admin/);
  });
});

describe('rotation', () => {
  it('keeps the id and the usage history; the old secret works during the grace period, then is refused', async () => {
    const k = await newKey({ app: 'rotating' });
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    const requestedAt = Date.now();
    const rotated = (
      await api(stack.gateway.url, `${keys}/${k.id}/rotate`, {
        key: acme.adminKey,
        body: { grace_period_seconds: 2 },
      })
    ).body;
    const expiresAt = Date.parse(rotated.previous_key_expires_at);
    expect(rotated.id).toBe(k.id);
    // The grace period starts inside the request, on the machine's one clock: never before it was asked for.
    expect(expiresAt - requestedAt).toBeGreaterThanOrEqual(2000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(2000);
    for (const gw of [stack.gateway, peer]) {
      expect((await callModel(gw.url, k.key)).status).toBe(200);
      expect((await callModel(gw.url, rotated.key)).status).toBe(200);
    }
    let served = 5;
    let sentAt = Date.now();
    let old = await callModel(peer.url, k.key);
    while (old.status === 200) {
      // Served: the peer checked before the announced expiry, so the call was sent before it.
      expect(sentAt).toBeLessThan(expiresAt);
      served++;
      // Generous: a loaded CI machine may be slow, but the old secret must stop working.
      expect(Date.now() - requestedAt).toBeLessThan(10_000);
      await new Promise((r) => setTimeout(r, 25));
      sentAt = Date.now();
      old = await callModel(peer.url, k.key);
    }
    // Refused: not one moment before the expiry the rotation announced.
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
    expect(old.status).toBe(401);
    expect(old.body.error.message).toMatch(/rotated/);
    expect((await callModel(stack.gateway.url, rotated.key)).status).toBe(200);
    served++;

    await Promise.all([stack.gateway.writer.flush(), peer.writer.flush()]);
    const day = new Date().toISOString().slice(0, 10);
    const report = (
      await api(
        stack.gateway.url,
        `/v1/organizations/usage_report/messages?starting_at=${day}&group_by[]=api_key_id&api_key_ids[]=${k.id}`,
        { key: acme.adminKey },
      )
    ).body;
    const results = report.data.flatMap((b: any) => b.results);
    expect(results).toHaveLength(1);
    // Every call served under either secret counts for the one key id (refusals are not calls).
    expect(results[0]).toMatchObject({ api_key_id: k.id, requests: served, errors: 0 });
  });
});

describe('rotation, whatever the clocks say', () => {
  it('a rotation that waits for the key row still gives the whole grace period, counted from when it could act', async () => {
    const k = await newKey();
    let releasedAt = 0;
    const sql = stack.gateway.store.db.sql;
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    const held = sql.begin(async (tx) => {
      await tx`select id from api_keys where id = ${k.id} for update`;
      locked();
      // Held until the rotation is seen waiting for this lock: the wait is in the rotation's transaction.
      await waitFor(
        async () =>
          (
            await sql`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%api_keys%'`
          ).length > 0,
        { timeout: 5_000, interval: 20, what: 'the rotation to wait for the row lock' },
      );
      releasedAt = Date.now();
    });
    await lockTaken;
    const rotated = (
      await api(stack.gateway.url, `${keys}/${k.id}/rotate`, {
        key: acme.adminKey,
        body: { grace_period_seconds: 2 },
      })
    ).body;
    await held;
    // The lock wait is not taken out of the grace period (it was when the expiry was stamped from BEGIN's now()).
    expect(Date.parse(rotated.previous_key_expires_at) - releasedAt).toBeGreaterThanOrEqual(2000);
  });
  it('previous_key_expires_at is the expiry the database enforces, not the app clock plus the grace period', async () => {
    const k = await newKey();
    // An app clock an hour ahead of the database's.
    const skewed = operatorRoutes({
      ...stack.deps,
      clock: () => Date.now() + 3_600_000,
      operatorToken: OPERATOR,
      scimTokens: stack.deps.store.scim,
    });
    const res = await skewed.request(`/accounts/${acme.id}/api_keys/${k.id}/rotate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify({ grace_period_seconds: 60 }),
    });
    expect(res.status).toBe(200);
    const [old] = await stack.gateway.store.db
      .sql`select expires_at from key_secrets where key_id = ${k.id} and expires_at is not null`;
    expect(((await res.json()) as { previous_key_expires_at: string }).previous_key_expires_at).toBe(
      old!.expires_at.toISOString(),
    );
  });
});

describe('last_used_at', () => {
  it('is kept in memory and written in batches, not per request', async () => {
    const k = await newKey();
    expect((await callModel(peer.url, k.key)).status).toBe(200);
    const [before] = await stack.gateway.store.db.sql`select last_used_at from api_keys where id = ${k.id}`;
    expect(before!.last_used_at).toBeNull();
    await peer.flushLastUsed();
    const listed = (await api(stack.gateway.url, `${keys}/${k.id}`, { key: acme.adminKey })).body;
    expect(Date.now() - Date.parse(listed.last_used_at)).toBeLessThan(10_000);
  });
});
