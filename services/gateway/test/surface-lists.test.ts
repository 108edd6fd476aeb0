import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure, startSurfaceStack, type Seat, type SurfaceStack } from './surface-kit';

/**
 * Issue 18: a member's lists are full pages of their own objects with working cursors, read
 * from Keygate's table of who made what, however the members' objects interleave at the provider.
 */
const FILES_BETA = 'files-api-2025-04-14';

describe("lists of a member's own objects", () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  const page = async (seat: Seat, path: string) => {
    const res = await fetch(`${s.stack.gateway.url}${path}`, {
      headers: { authorization: `Bearer ${seat.key}`, 'anthropic-beta': FILES_BETA },
    });
    expect(res.status).toBe(200);
    return (await res.json()) as {
      data: { id: string }[];
      has_more: boolean;
      first_id: string | null;
      last_id: string | null;
      next_page: string | null;
    };
  };

  const upload = async (client: Anthropic, name: string) =>
    (
      await client.beta.files.upload({
        file: await toFile(Buffer.from(name), `${name}.txt`, { type: 'text/plain' }),
        betas: [FILES_BETA],
      })
    ).id;

  it('files: full pages, after_id, before_id and the SDK’s own paging, with two members interleaving', async () => {
    const alice: string[] = [];
    const bob: string[] = [];
    for (let i = 0; i < 5; i++) {
      alice.push(await upload(s.alice.client, `alice-${i}`));
      bob.push(await upload(s.bob.client, `bob-${i}`));
    }
    const newest = [...alice].reverse();

    const p1 = await page(s.alice, '/v1/files?limit=2');
    expect(p1).toEqual({
      data: [expect.objectContaining({ id: newest[0] }), expect.objectContaining({ id: newest[1] })],
      has_more: true,
      first_id: newest[0],
      last_id: newest[1],
      next_page: newest[1],
      prev_page: null,
    });
    const p2 = await page(s.alice, `/v1/files?limit=2&after_id=${p1.last_id}`);
    expect(p2.data.map((f) => f.id)).toEqual(newest.slice(2, 4));
    expect(p2.has_more).toBe(true);
    const p3 = await page(s.alice, `/v1/files?limit=2&after_id=${p2.last_id}`);
    expect(p3.data.map((f) => f.id)).toEqual(newest.slice(4));
    expect(p3).toMatchObject({ has_more: false, next_page: null });
    const back = await page(s.alice, `/v1/files?limit=2&before_id=${newest[3]}`);
    expect(back.data.map((f) => f.id)).toEqual(newest.slice(1, 3));
    expect(back.has_more).toBe(true);
    // Each object is as the provider has it now.
    expect(p1.data[0]).toMatchObject({ type: 'file', filename: 'alice-4.txt', size_bytes: 7 });

    // The official SDK's own paging (its `page` cursor) walks all of Alice's, and only hers.
    const walked: string[] = [];
    for await (const f of s.alice.client.beta.files.list({ limit: 2, betas: [FILES_BETA] }))
      walked.push(f.id);
    expect(walked).toEqual(newest);
    const bobs: string[] = [];
    for await (const f of s.bob.client.beta.files.list({ limit: 3, betas: [FILES_BETA] })) bobs.push(f.id);
    expect(bobs).toEqual([...bob].reverse());

    // A file deleted at the provider behind Keygate's back is skipped; the page is still full.
    await s.direct.beta.files.delete(newest[0]!, { betas: [FILES_BETA] });
    expect((await page(s.alice, '/v1/files?limit=2')).data.map((f) => f.id)).toEqual(newest.slice(1, 3));

    // Admins get the provider's page: every member's files.
    const all = await s.admin.client.beta.files.list({ limit: 100, betas: [FILES_BETA] });
    expect(all.data.map((f) => f.id)).toEqual(expect.arrayContaining([...alice.slice(0, 4), ...bob]));

    expect(await failure(s.alice.client.beta.files.list({ limit: 0, betas: [FILES_BETA] }))).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
    });
  });

  it("a member's test key lists what test keys made, and leaves their live files alone", async () => {
    const test = await s.stack.newKey({ kind: 'test', memberId: s.alice.memberId });
    const testSeat = { ...s.alice, key: test.secret, keyId: test.id };
    const live = await upload(s.alice.client, 'alice-live');
    const made = await upload(
      new Anthropic({ baseURL: s.stack.gateway.url, apiKey: test.secret, maxRetries: 0 }),
      'alice-test',
    );
    // The test key's list: its own file only. Before, it looked the live one up in the emulator,
    // did not find it there, and forgot it, so the live list lost it too.
    const listed = await page(testSeat, '/v1/files?limit=100');
    expect(listed.data.map((f) => f.id)).toContain(made);
    expect(listed.data.map((f) => f.id)).not.toContain(live);
    const liveList = await page(s.alice, '/v1/files?limit=100');
    expect(liveList.data.map((f) => f.id)).toContain(live);
    expect(liveList.data.map((f) => f.id)).not.toContain(made);
    const [row] = await s.stack.gateway.store.db
      .sql`select deleted_at from provider_objects where id = ${live}`;
    expect(row).toEqual({ deleted_at: null });
  });

  it("a file one kind of key made is not found through the member's other kind, by id or in a body", async () => {
    const test = await s.stack.newKey({ kind: 'test', memberId: s.alice.memberId });
    const testClient = new Anthropic({ baseURL: s.stack.gateway.url, apiKey: test.secret, maxRetries: 0 });
    const live = await upload(s.alice.client, 'alice-live-ref');
    const made = await upload(testClient, 'alice-test-ref');
    const naming = (id: string) => ({
      model: 'claude-opus-4-5',
      max_tokens: 8,
      messages: [
        {
          role: 'user' as const,
          content: [
            { type: 'document' as const, source: { type: 'file' as const, file_id: id } },
            { type: 'text' as const, text: 'summarize' },
          ],
        },
      ],
      betas: [FILES_BETA],
    });
    // Keygate's own 404, before anything goes upstream: the same answer as another member's file.
    for (const [client, id] of [
      [s.alice.client, made],
      [testClient, live],
    ] as const) {
      expect(await failure(client.beta.messages.create(naming(id)))).toMatchObject({
        status: 404,
        type: 'not_found_error',
        message: `File not found: ${id}`,
      });
      expect(await failure(client.beta.files.retrieveMetadata(id, { betas: [FILES_BETA] }))).toMatchObject({
        status: 404,
        type: 'not_found_error',
        message: `File not found: ${id}`,
      });
    }
    // Each kind still reaches its own.
    expect((await s.alice.client.beta.messages.create(naming(live))).type).toBe('message');
    expect((await testClient.beta.messages.create(naming(made))).type).toBe('message');
  });

  // Found by the property test of hostile-routes (seed 1369394513): a cursor with a NUL reached
  // PostgreSQL, which refused the byte, and the list answered 500.
  it('a cursor that is no object id (NUL, non-ASCII, too long) is a 400 naming it, on every list', async () => {
    const lists = [
      '/v1/files',
      '/v1/messages/batches',
      '/v1/skills',
      '/v1/agents',
      '/v1/environments',
      '/v1/sessions',
    ];
    for (const list of lists) {
      for (const [name, value] of [
        ['after_id', 'a%00b'],
        ['before_id', '%C3%A9t%C3%A9'],
        ['page', 'x'.repeat(300)],
      ] as const) {
        const res = await fetch(`${s.stack.gateway.url}${list}?${name}=${value}`, {
          headers: { authorization: `Bearer ${s.alice.key}`, 'anthropic-beta': FILES_BETA },
        });
        expect(res.status, `${list} ${name}`).toBe(400);
        expect(await res.json()).toMatchObject({
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: `${name}: not an object id (visible ASCII, at most 256 characters).`,
          },
        });
      }
    }
  });

  it('batches, agents and sessions page the same way', async () => {
    const batch = (seat: Seat, tag: string) =>
      seat.client.messages.batches.create({
        requests: [
          {
            custom_id: tag,
            params: { model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: tag }] },
          },
        ],
      });
    const agent = (seat: Seat, name: string) =>
      seat.client.beta.agents.create({ name, model: 'claude-haiku-4-5' });
    const mine: Record<'batches' | 'agents' | 'sessions', string[]> = {
      batches: [],
      agents: [],
      sessions: [],
    };
    const aliceEnv = (await s.alice.client.beta.environments.create({ name: 'alice' })).id;
    const bobEnv = (await s.bob.client.beta.environments.create({ name: 'bob' })).id;
    for (let i = 0; i < 3; i++) {
      mine.batches.push((await batch(s.alice, `a${i}`)).id);
      await batch(s.bob, `b${i}`);
      const a = await agent(s.alice, `alice ${i}`);
      mine.agents.push(a.id);
      const b = await agent(s.bob, `bob ${i}`);
      mine.sessions.push(
        (await s.alice.client.beta.sessions.create({ agent: a.id, environment_id: aliceEnv })).id,
      );
      await s.bob.client.beta.sessions.create({ agent: b.id, environment_id: bobEnv });
    }
    const walk = async (list: AsyncIterable<{ id: string }>) => {
      const ids: string[] = [];
      for await (const x of list) ids.push(x.id);
      return ids;
    };
    expect(await walk(s.alice.client.messages.batches.list({ limit: 1 }))).toEqual(
      [...mine.batches].reverse(),
    );
    expect(await walk(s.alice.client.beta.agents.list({ limit: 2 }))).toEqual([...mine.agents].reverse());
    expect(await walk(s.alice.client.beta.sessions.list({ limit: 2 }))).toEqual([...mine.sessions].reverse());
    const first = await page(s.alice, '/v1/messages/batches?limit=2');
    expect(first.data.map((b) => b.id)).toEqual([mine.batches[2], mine.batches[1]]);
    expect(first.has_more).toBe(true);
    // Through Keygate, results_url names Keygate (the batch has not ended yet: null until then).
    for (const b of first.data as { results_url?: string | null }[])
      expect(b.results_url ?? null).toSatisfy(
        (u: string | null) => u === null || u.startsWith(s.stack.gateway.url),
      );
  });
});
