import { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure, startSurfaceStack, type SurfaceStack } from './surface-kit';

describe('Skills and agent sessions through the gateway', () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  it('a session: created, owned, its event stream relayed as events arrive; another member gets 404', async () => {
    // A member's session names her own agent and environment (another's answer 404: surface-body-checks).
    const agent = await s.alice.client.beta.agents.create({ name: 'Planner', model: 'claude-haiku-4-5' });
    const env = await s.alice.client.beta.environments.create({ name: 'Planning' });
    const session = await s.alice.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    expect(session).toMatchObject({ type: 'session', status: 'idle' });
    expect(
      (await s.direct.beta.sessions.create({ agent: 'agent_01x', environment_id: 'env_01x' })).type,
    ).toBe('session');

    const stream = await s.alice.client.beta.sessions.events.stream(session.id);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of stream) {
        seen.push(event.type);
        if (event.type === 'session.status_idle') break;
      }
    })();
    // The stream is open before anything is sent: events can only arrive through it as they happen.
    await s.alice.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'Plan the quarterly report' }] }],
    });
    await reading;
    expect(seen).toEqual([
      'user.message',
      'session.status_running',
      'agent.message',
      'session.usage',
      'session.status_idle',
    ]);
    const after = await s.alice.client.beta.sessions.retrieve(session.id);
    expect(after.usage).toMatchObject({ input_tokens: 14, output_tokens: 8, cache_read_input_tokens: 0 });

    for (const attempt of [
      () => s.bob.client.beta.sessions.retrieve(session.id),
      () => s.bob.client.beta.sessions.events.list(session.id),
      () =>
        s.bob.client.beta.sessions.events.send(session.id, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
        }),
    ])
      expect(await failure(attempt())).toEqual({
        status: 404,
        type: 'not_found_error',
        message: `Session not found: ${session.id}`,
      });
    expect((await s.bob.client.beta.sessions.list()).data.map((x) => x.id)).not.toContain(session.id);
    expect((await s.admin.client.beta.sessions.list()).data.map((x) => x.id)).toContain(session.id);

    const calls = (await s.stack.calls()).filter((c) => c.key_id === s.alice.keyId);
    expect(calls.map((c) => c.endpoint)).toEqual(
      expect.arrayContaining([
        'POST /v1/sessions',
        'GET /v1/sessions/{id}/events/stream',
        'POST /v1/sessions/{id}/events',
        'GET /v1/sessions/{id}',
      ]),
    );
  });

  it('a skill: uploaded, owned, listed and deleted like a file', async () => {
    const skill = await s.alice.client.beta.skills.create({
      display_name: 'Report writer',
      files: [await toFile(Buffer.from('---\nname: report\n---\nWrite reports.'), 'report/SKILL.md')],
    });
    expect(skill).toMatchObject({ type: 'skill', display_name: 'Report writer' });
    expect(await failure(s.bob.client.beta.skills.retrieve(skill.id))).toMatchObject({ status: 404 });
    expect((await s.bob.client.beta.skills.list()).data.map((x) => x.id)).not.toContain(skill.id);
    expect((await s.alice.client.beta.skills.retrieve(skill.id)).id).toBe(skill.id);
    expect(await s.alice.client.beta.skills.delete(skill.id)).toMatchObject({ id: skill.id });
  });
});
