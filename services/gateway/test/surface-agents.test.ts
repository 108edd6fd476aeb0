import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from './harness';
import { waitFor } from './kit/wait';
import { failure, startSurfaceStack, type SurfaceStack } from './surface-kit';

/**
 * Issue 18: Managed Agents' agents and environments through the gateway, owned like files; a
 * session's usage recorded as calls of its creator, which its budgets count.
 *
 * Prices by hand: Claude Sonnet 4.5 is $3 per million input tokens and $15 per million output
 * tokens (https://docs.claude.com/en/docs/about-claude/pricing, read 2026-11-25); a USD per
 * million tokens is a micro-USD per token.
 */
const stable = ({ id: _i, created_at: _c, updated_at: _u, archived_at: _a, ...rest }: any) => rest;

describe('agents, environments and session usage through the gateway', () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  it('agents and environments: the same answers as straight at the emulator; member B gets 404 for member A’s, admins see both', async () => {
    const agentBody = { name: 'Report writer', model: 'claude-sonnet-4-5', system: 'Write reports.' };
    const [agent, direct] = [
      await s.alice.client.beta.agents.create(agentBody),
      await s.direct.beta.agents.create(agentBody),
    ];
    expect(stable(agent)).toEqual(stable(direct));
    expect(agent).toMatchObject({ type: 'agent', model: { id: 'claude-sonnet-4-5' }, version: 1 });
    expect(stable(await s.alice.client.beta.agents.retrieve(agent.id))).toEqual(stable(direct));

    const envBody = { name: 'Reports sandbox' };
    const [env, directEnv] = [
      await s.alice.client.beta.environments.create(envBody),
      await s.direct.beta.environments.create(envBody),
    ];
    expect(stable(env)).toEqual(stable(directEnv));
    expect(env.type).toBe('environment');

    for (const attempt of [
      () => s.bob.client.beta.agents.retrieve(agent.id),
      () => s.bob.client.beta.agents.archive(agent.id),
    ])
      expect(await failure(attempt())).toEqual({
        status: 404,
        type: 'not_found_error',
        message: `Agent not found: ${agent.id}`,
      });
    for (const attempt of [
      () => s.bob.client.beta.environments.retrieve(env.id),
      () => s.bob.client.beta.environments.delete(env.id),
    ])
      expect(await failure(attempt())).toEqual({
        status: 404,
        type: 'not_found_error',
        message: `Environment not found: ${env.id}`,
      });
    // An id the provider never made answers the provider's own 404, through the gateway too (admins reach the provider).
    expect(await failure(s.admin.client.beta.agents.retrieve('agent_011missing'))).toEqual(
      await failure(s.direct.beta.agents.retrieve('agent_011missing')),
    );
    expect(await failure(s.direct.beta.agents.create({ name: 'x' } as never))).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
    });

    const bobAgent = await s.bob.client.beta.agents.create({ name: 'Bob', model: 'claude-haiku-4-5' });
    const ids = async (c: typeof s.alice.client) => (await c.beta.agents.list()).data.map((a) => a.id);
    expect(await ids(s.bob.client)).toEqual([bobAgent.id]);
    expect(await ids(s.alice.client)).toEqual([agent.id]);
    expect(await ids(s.admin.client)).toEqual(expect.arrayContaining([agent.id, bobAgent.id]));
    expect((await s.admin.client.beta.environments.list()).data.map((e) => e.id)).toContain(env.id);
    expect((await s.bob.client.beta.environments.list()).data).toEqual([]);

    expect((await s.alice.client.beta.agents.archive(agent.id)).archived_at).not.toBeNull();
    expect(await s.admin.client.beta.environments.delete(env.id)).toEqual({
      id: env.id,
      type: 'environment_deleted',
    });
  });

  it("a session's usage is recorded as calls of its creator, grouped by the session, and its member's budget counts it", async () => {
    const sql = s.stack.gateway.store.db.sql;
    const agent = await s.alice.client.beta.agents.create({ name: 'Analyst', model: 'claude-sonnet-4-5' });
    const env = await s.alice.client.beta.environments.create({ name: 'Analysis' });
    const session = await s.alice.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const calls = async () =>
      sql`select * from calls where group_id = ${session.id} and endpoint = 'sessions.usage' order by created_at`;
    const say = (text: string) =>
      s.alice.client.beta.sessions.events.send(session.id, {
        events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
      });

    await say('Plan the quarterly report');
    const totals1 = s.stack.emulator.surface.sessions.get(session.id).object.usage;
    expect(totals1).toMatchObject({ input_tokens: 14, output_tokens: 8 });
    const first = await waitFor(
      async () => {
        await s.stack.gateway.writer.flush();
        const rows = await calls();
        return rows.length === 1 && rows;
      },
      { timeout: 10_000, what: 'the session usage to be recorded' },
    );
    expect(first[0]).toMatchObject({
      member_id: s.alice.memberId,
      key_id: s.alice.keyId,
      model: 'claude-sonnet-4-5',
      input_tokens: 14,
      output_tokens: 8,
      status: 200,
    });
    // Seen again with no new work: nothing more is recorded.
    expect((await s.alice.client.beta.sessions.retrieve(session.id)).usage).toMatchObject(totals1);
    await s.stack.gateway.writer.flush();
    expect(await calls()).toHaveLength(1);

    // A hard-capped member budget of one cent; a long turn (710 input and 704 output tokens:
    // 710 × 3 + 704 × 15 = 12,690 micro-USD) takes the member past it.
    const budget = await api(s.stack.gateway.url, '/v1/organizations/budgets', {
      key: s.adminKey,
      body: { scope: 'user', target_id: s.alice.memberId, limit_cents: 1, period: 'monthly', name: 'alice' },
    });
    expect(budget.status).toBe(201);
    await say(Array.from({ length: 700 }, (_, i) => `word${i}`).join(' '));
    const second = await waitFor(
      async () => {
        await s.stack.gateway.writer.flush();
        const rows = await calls();
        return rows.length === 2 && rows[1];
      },
      { timeout: 10_000, what: 'the second turn to be recorded' },
    );
    expect(second).toMatchObject({ input_tokens: 710, output_tokens: 704 });
    const [cost] = await sql`
      select sum(input_tokens * 3 + output_tokens * 15)::float8 as micro from calls
      where group_id = ${session.id} and endpoint = 'sessions.usage'`;
    expect(cost!.micro).toBe(14 * 3 + 8 * 15 + 12_690);

    await waitFor(
      async () => {
        await s.stack.gateway.limits.admission.settled();
        return (await failure(say('One more thing'))).status === 429;
      },
      { timeout: 10_000, what: "the member's budget to refuse the session's next turn" },
    );
    const refused = await failure(say('One more thing'));
    expect(refused.type).toBe('billing_error');
    expect(refused.message).toMatch(
      /member's monthly budget 'alice' of \$0\.01 \(bdg_\w+\): \$0\.\d\d spent since/,
    );
    // Bob's turns are not Alice's budget.
    const bobs = await s.bob.client.beta.sessions.create({
      agent: (await s.bob.client.beta.agents.create({ name: 'Bob', model: 'claude-sonnet-4-5' })).id,
      environment_id: (await s.bob.client.beta.environments.create({ name: 'Bob' })).id,
    });
    expect(
      (
        await s.bob.client.beta.sessions.events.send(bobs.id, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
        })
      ).data,
    ).toHaveLength(1);
  });
});
