import { DEFAULT_ADMIN_KEY } from '@keygate/emulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/server';
import { api, startStack, type Stack } from './harness';

// Opus 5.5 at the provider's published rates, USD per million tokens, read 2026-11-25 from
// https://platform.claude.com/docs/en/models/opus-5-5/overview: $4 input, $20 output.
const OPUS_5_5 = { in: 4, out: 20 };
const DAY = 86_400_000;

let now = Date.now();
let stack: Stack;
let peer: Gateway;
let admin: string;

beforeAll(async () => {
  stack = await startStack({}, { clock: () => now });
  peer = await stack.startPeer();
  admin = (await stack.newKey({ kind: 'admin' })).secret;
  const set = await api(stack.gateway.url, '/v1/organizations/provider_admin_key', {
    key: admin,
    method: 'PUT',
    body: { admin_key: DEFAULT_ADMIN_KEY },
  });
  expect(set.status).toBe(200);
});
afterAll(() => stack?.close());

describe('the daily reconciliation on two gateway instances sharing one database', () => {
  it("runs yesterday's reconciliation once, on exactly one instance, however the ticks fall", async () => {
    // Today's calls, through both instances.
    const usages = [];
    for (const gw of [stack.gateway, peer]) {
      const res = await api(gw.url, '/v1/messages', {
        bearer: stack.appKey,
        body: { model: 'claude-opus-5-5', max_tokens: 64, messages: [{ role: 'user', content: 'Once.' }] },
      });
      expect(res.status).toBe(200);
      usages.push(res.body.usage);
      await gw.writer.flush();
    }
    // The next day: both instances' hourly ticks fire at once, then again an hour later.
    now = Date.now() + DAY;
    const first = await Promise.all([
      stack.gateway.reconciliation.runDue(),
      peer.reconciliation.runDue(),
      stack.gateway.reconciliation.runDue(),
      peer.reconciliation.runDue(),
    ]);
    expect(first.flat()).toEqual([stack.account.id]);
    const again = await Promise.all([stack.gateway.reconciliation.runDue(), peer.reconciliation.runDue()]);
    expect(again.flat()).toEqual([]);

    const sql = stack.gateway.store.db.sql;
    const runs = await sql`select * from reconciliations where account_id = ${stack.account.id}`;
    expect(runs).toHaveLength(1);
    const today = new Date(Math.floor(Date.now() / DAY) * DAY);
    expect(runs[0]!.starting_at.getTime()).toBe(today.getTime());
    const claims =
      await sql`select day::text as day from reconciliation_claims where account_id = ${stack.account.id}`;
    expect(claims).toEqual([{ day: today.toISOString().slice(0, 10) }]);
    // The one run saw both instances' calls, at the published price worked out by hand.
    const cents = usages.reduce(
      (s, u) => s + (u.input_tokens * OPUS_5_5.in + u.output_tokens * OPUS_5_5.out) / 10_000,
      0,
    );
    const [line] = runs[0]!.result.lines;
    expect(line).toMatchObject({ model: 'claude-opus-5-5', token_drift: 0, likely_cause: null });
    expect(line.keygate.cents).toBeCloseTo(cents, 6);
    expect(line.provider.cents).toBeCloseTo(cents, 6);
  });

  it('a run that fails gives its claim back, and a later tick on the other instance runs the day', async () => {
    now = Date.now() + 2 * DAY;
    const sql = stack.gateway.store.db.sql;
    // The provider refuses the Admin API key: the run fails and releases its claim.
    const set = await api(stack.gateway.url, '/v1/organizations/provider_admin_key', {
      key: admin,
      method: 'PUT',
      body: { admin_key: 'sk-ant-admin01-not-the-right-key' },
    });
    expect(set.status).toBe(200);
    expect(await stack.gateway.reconciliation.runDue()).toEqual([]);
    const day = new Date(Math.floor(now / DAY) * DAY - DAY).toISOString().slice(0, 10);
    expect(
      await sql`select 1 from reconciliation_claims where account_id = ${stack.account.id} and day = ${day}`,
    ).toHaveLength(0);
    const failed = stack.logs.filter((l) => l.includes('reconciliation failed'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain('401');
    expect(failed[0]).not.toContain('not-the-right-key');

    await api(stack.gateway.url, '/v1/organizations/provider_admin_key', {
      key: admin,
      method: 'PUT',
      body: { admin_key: DEFAULT_ADMIN_KEY },
    });
    expect(await peer.reconciliation.runDue()).toEqual([stack.account.id]);
    expect(await stack.gateway.reconciliation.runDue()).toEqual([]);
  });
});
