import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from './harness';
import { failure, startSurfaceStack, type Seat, type SurfaceStack } from './surface-kit';

/**
 * Issue 29, findings 6 and 7: what a provider surface body names (a model, an agent, an
 * environment, a file, a skill, a vault) is held to the same rules as `/v1/messages`' model and
 * as a direct GET of the object, before the provider sees the body. Official SDK, real gateway,
 * the emulator as the provider; a refused body leaves no trace there.
 */
describe('models and references named in provider surface bodies', () => {
  let s: SurfaceStack;
  let carol: Seat;
  let bobs: { agent: string; env: string; file: string; skill: string };
  let policy: string;
  beforeAll(async () => {
    s = await startSurfaceStack();
    // Carol is limited to Haiku before her key is first used, so no cached key predates the rule.
    const member = await api(s.stack.gateway.url, '/v1/organizations/users', {
      key: s.adminKey,
      body: { email: 'carol@example.com' },
    });
    const key = await api(s.stack.gateway.url, '/v1/organizations/api_keys', {
      key: s.adminKey,
      body: { member_id: member.body.id, name: 'carol' },
    });
    const set = await api(s.stack.gateway.url, '/v1/organizations/model_policies', {
      key: s.adminKey,
      body: {
        scope: { type: 'user', user_id: member.body.id },
        allowed_models: ['claude-haiku-*'],
        max_tokens: null,
      },
    });
    expect(set.status).toBe(200);
    policy = `the model policy of member 'carol@example.com' (${member.body.id}), which allows claude-haiku-*.`;
    carol = {
      memberId: member.body.id,
      keyId: key.body.id,
      key: key.body.key,
      client: new Anthropic({
        baseURL: s.stack.gateway.url,
        apiKey: key.body.key,
        maxRetries: 0,
      }),
    };
    const bob = s.bob.client.beta;
    bobs = {
      agent: (
        await bob.agents.create({ name: 'Bob', model: 'claude-haiku-4-5', system: 'Bob’s secret prompt' })
      ).id,
      env: (await bob.environments.create({ name: 'Bob' })).id,
      file: (
        await bob.files.upload({ file: await toFile(Buffer.from('bob'), 'bob.txt', { type: 'text/plain' }) })
      ).id,
      skill: (
        await bob.skills.create({
          display_name: 'Bob',
          files: [await toFile(Buffer.from('---\nname: bob\n---\nBob.'), 'bob/SKILL.md')],
        })
      ).id,
    };
  });
  afterAll(() => s?.stack.close());

  const made = () => {
    const e = s.stack.emulator.surface;
    return {
      agents: e.agents.agents.size,
      sessions: e.sessions.sessions.size,
      batches: e.batches.batches.size,
      messages: s.stack.emulator.ledger.entries.length,
    };
  };

  it('finding 6: a model the policy excludes is refused wherever a body names it, before the provider', async () => {
    const mine = await carol.client.beta.agents.create({ name: 'Mine', model: 'claude-haiku-4-5' });
    const env = await carol.client.beta.environments.create({ name: 'Mine' });
    const before = made();
    const refusal = (field: string) => ({
      status: 400,
      type: 'invalid_request_error',
      message: `${field}: 'claude-opus-4-5' is not allowed by ${policy}`,
    });
    expect(await failure(carol.client.beta.agents.create({ name: 'x', model: 'claude-opus-4-5' }))).toEqual(
      refusal('model'),
    );
    expect(
      await failure(
        carol.client.beta.agents.create({ name: 'x', model: { id: 'claude-opus-4-5', speed: 'fast' } }),
      ),
    ).toEqual(refusal('model.id'));
    expect(
      await failure(carol.client.beta.agents.update(mine.id, { version: 1, model: 'claude-opus-4-5' })),
    ).toEqual(refusal('model'));
    expect(
      await failure(
        carol.client.beta.agents.create({
          name: 'x',
          model: 'claude-haiku-4-5',
          multiagent: { type: 'multiagent_20261001', advisor: { type: 'enabled', model: 'claude-opus-4-5' } },
        }),
      ),
    ).toEqual(refusal('multiagent.advisor.model'));
    expect(
      await failure(
        carol.client.beta.sessions.create({
          agent: { type: 'agent_with_overrides', id: mine.id, model: 'claude-opus-4-5' },
          environment_id: env.id,
        }),
      ),
    ).toEqual(refusal('agent.model'));
    expect(
      await failure(
        carol.client.messages.batches.create({
          requests: [
            {
              custom_id: 'a',
              params: {
                model: 'claude-haiku-4-5',
                max_tokens: 8,
                messages: [{ role: 'user', content: 'a' }],
              },
            },
            {
              custom_id: 'b',
              params: { model: 'claude-opus-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'b' }] },
            },
          ],
        }),
      ),
    ).toEqual(refusal('requests[1].params.model'));
    expect(
      await failure(
        carol.client.messages.countTokens({
          model: 'claude-opus-4-5',
          messages: [{ role: 'user', content: 'a' }],
        }),
      ),
    ).toEqual(refusal('model'));
    // An endpoint Keygate does not know yet, through the open passthrough: its top-level model too.
    const passthrough = await fetch(`${s.stack.gateway.url}/v1/something_new`, {
      method: 'POST',
      headers: { authorization: `Bearer ${carol.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-opus-4-5' }),
    });
    expect(passthrough.status).toBe(400);
    expect(((await passthrough.json()) as { error: { message: string } }).error.message).toBe(
      refusal('model').message,
    );
    expect(made()).toEqual(before);
    // What the policy allows goes through.
    expect(
      (
        await carol.client.beta.sessions.create({
          agent: { type: 'agent', id: mine.id },
          environment_id: env.id,
        })
      ).type,
    ).toBe('session');
  });

  it('finding 7: an agent, environment, file, skill or vault of someone else named in a body answers as a GET of it would', async () => {
    const alice = s.alice.client;
    const agent = await alice.beta.agents.create({ name: 'Alice', model: 'claude-haiku-4-5' });
    const env = await alice.beta.environments.create({ name: 'Alice' });
    const session = await alice.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const before = made();
    const missing = (noun: string, id: string) => ({
      status: 404,
      type: 'not_found_error',
      message: `${noun} not found: ${id}`,
    });
    // The direct GETs answer 404: the body references must answer the same.
    expect(await failure(alice.beta.agents.retrieve(bobs.agent))).toEqual(missing('Agent', bobs.agent));
    for (const [attempt, noun, id] of [
      [() => alice.beta.sessions.create({ agent: bobs.agent, environment_id: env.id }), 'Agent', bobs.agent],
      [
        () =>
          alice.beta.sessions.create({ agent: { type: 'agent', id: bobs.agent }, environment_id: env.id }),
        'Agent',
        bobs.agent,
      ],
      [
        () => alice.beta.sessions.create({ agent: agent.id, environment_id: bobs.env }),
        'Environment',
        bobs.env,
      ],
      [
        () =>
          alice.beta.sessions.create({
            agent: agent.id,
            environment_id: env.id,
            resources: [{ type: 'file', file_id: bobs.file, mount_path: '/mnt/bob.txt' }],
          }),
        'File',
        bobs.file,
      ],
      [
        () =>
          alice.beta.sessions.create({
            agent: agent.id,
            environment_id: env.id,
            vault_ids: ['vlt_011account'],
          }),
        'Vault',
        'vlt_011account',
      ],
      [
        () =>
          alice.beta.sessions.create({
            agent: {
              type: 'agent_with_overrides',
              id: agent.id,
              skills: [{ type: 'custom', skill_id: bobs.skill }],
            },
            environment_id: env.id,
          }),
        'Skill',
        bobs.skill,
      ],
      [
        () => alice.beta.sessions.resources.add(session.id, { type: 'file', file_id: bobs.file }),
        'File',
        bobs.file,
      ],
      [
        () =>
          alice.beta.agents.create({
            name: 'x',
            model: 'claude-haiku-4-5',
            skills: [{ type: 'custom', skill_id: bobs.skill }],
          }),
        'Skill',
        bobs.skill,
      ],
      [
        () =>
          alice.beta.messages.create({
            model: 'claude-haiku-4-5',
            max_tokens: 8,
            messages: [{ role: 'user', content: 'hi' }],
            container: { skills: [{ type: 'custom', skill_id: bobs.skill, version: 'latest' }] },
            betas: ['skills-2025-10-02'],
          }),
        'Skill',
        bobs.skill,
      ],
      [
        () =>
          alice.messages.batches.create({
            requests: [
              {
                custom_id: 'a',
                params: {
                  model: 'claude-haiku-4-5',
                  max_tokens: 8,
                  messages: [{ role: 'user', content: 'a' }],
                  container: { skills: [{ type: 'custom', skill_id: bobs.skill }] },
                } as never,
              },
            ],
          }),
        'Skill',
        bobs.skill,
      ],
    ] as const)
      expect(await failure(attempt()), `${noun} ${id}`).toEqual(missing(noun, id));
    // A key spelled with a JSON escape is the same key to the provider.
    const escaped = await fetch(`${s.stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.alice.key}`, 'content-type': 'application/json' },
      body: `{"model":"claude-haiku-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"container":{"skills":[{"type":"custom","skill\\u005fid":"${bobs.skill}"}]}}`,
    });
    expect(escaped.status).toBe(404);
    // Through the open passthrough: a deployment runs an agent; an unknown endpoint's file_ids.
    for (const [path, body, message] of [
      [
        '/v1/deployments',
        { name: 'd', agent: bobs.agent, environment_id: env.id },
        `Agent not found: ${bobs.agent}`,
      ],
      ['/v1/something_new', { deep: [{ file_id: bobs.file }] }, `File not found: ${bobs.file}`],
    ] as const) {
      const res = await fetch(`${s.stack.gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.alice.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ error: { message } });
    }
    expect(made()).toEqual(before);

    // The provider's own skills are everyone's; an admin may name any object of the account.
    const shared = await alice.beta.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
      container: { skills: [{ type: 'anthropic', skill_id: 'pptx', version: 'latest' }] },
      betas: ['skills-2025-10-02'],
    });
    expect(shared.type).toBe('message');
    const adminSession = await s.admin.client.beta.sessions.create({
      agent: bobs.agent,
      environment_id: bobs.env,
      resources: [{ type: 'file', file_id: bobs.file }],
    });
    expect(adminSession.type).toBe('session');
  });
});
