import Anthropic, { toFile } from '@anthropic-ai/sdk';
import Anthropic20230601 from '@anthropic-ai/sdk-2023-06-01';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure, startSurfaceStack, type Seat, type SurfaceStack } from './surface-kit';

/**
 * Files and Skills GA through the gateway (sources in @keygate/protocol's beta-forms.ts, read
 * 2026-11-29): calls with no beta header are taken and answered in the GA shapes (files'
 * `expires_at`, `page` / `next_page` lists; skills' `latest_version_id`), by the official SDK's
 * GA methods of both majors (1.x sends `anthropic-version: 2026-10-21`, 0.x 2023-06-01); the
 * beta value keeps the beta shapes and their paging.
 */
const FILES_BETA = 'files-api-2025-04-14';

describe('Files and Skills in their GA shapes', () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack();
  });
  afterAll(() => s?.stack.close());

  const clients = (seat: Seat) =>
    [
      [
        '1.x',
        new Anthropic({ baseURL: s.stack.gateway.url, authToken: seat.key, apiKey: null, maxRetries: 0 }),
      ],
      [
        '0.x',
        new Anthropic20230601({
          baseURL: s.stack.gateway.url,
          authToken: seat.key,
          apiKey: null,
          maxRetries: 0,
        }),
      ],
    ] as const;

  const raw = async (seat: Seat, path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${s.stack.gateway.url}${path}`, {
      headers: { authorization: `Bearer ${seat.key}`, ...headers },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("files: each SDK major's GA methods, no beta header: expiry, and lists of the member's own files by page / next_page", async () => {
    for (const [major, client] of clients(s.alice)) {
      const made: string[] = [];
      for (let i = 0; i < 3; i++) {
        const f = await client.files.upload({
          file: await toFile(Buffer.from(`${major}-${i}`), `${major}-${i}.txt`, { type: 'text/plain' }),
          expires_in_seconds: 3600 * (i + 1),
        });
        expect(Date.parse(f.expires_at!) - Date.parse(f.created_at)).toBe(3_600_000 * (i + 1));
        made.push(f.id);
      }
      expect((await client.files.retrieveMetadata(made[0]!)).expires_at).toEqual(expect.any(String));
      const seen: string[] = [];
      for await (const f of client.files.list({ limit: 2 })) seen.push(f.id);
      expect(seen.slice(0, 3)).toEqual([...made].reverse());
      expect(Buffer.from(await (await client.files.download(made[1]!)).arrayBuffer()).toString()).toBe(
        `${major}-1`,
      );
      expect(await client.files.delete(made[2]!)).toEqual({ id: made[2], type: 'file_deleted' });
    }
    // Bob's list holds none of Alice's files.
    const bobs = await raw(s.bob, '/v1/files');
    expect(bobs.body).toEqual({ data: [], next_page: null });
  });

  it('files: the GA list answers {data, next_page} only; with the beta value, the beta page and no expiry field', async () => {
    const ga = await raw(s.alice, '/v1/files?limit=1');
    expect(ga.status).toBe(200);
    expect(Object.keys(ga.body).sort()).toEqual(['data', 'next_page']);
    const next = await raw(s.alice, `/v1/files?limit=1&page=${ga.body.next_page}`);
    expect((next.body.data as { id: string }[])[0]?.id).not.toBe((ga.body.data as { id: string }[])[0]?.id);

    const beta = await raw(s.alice, '/v1/files?limit=1', { 'anthropic-beta': FILES_BETA });
    expect(beta.body).toMatchObject({ has_more: true, first_id: expect.any(String), prev_page: null });
    expect((beta.body.data as object[])[0]).not.toHaveProperty('expires_at');
  });

  it('files: an expiry outside one hour to ninety days is refused with the provider’s message', async () => {
    const [, client] = clients(s.alice)[0];
    const refused = await failure(
      client.files.upload({
        file: await toFile(Buffer.from('x'), 'x.txt', { type: 'text/plain' }),
        expires_in_seconds: 60,
      }),
    );
    expect(refused).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: expect.stringContaining('expires_in_seconds'),
    });
  });

  it("skills: each SDK major's GA methods name latest_version_id; the beta value gets latest_version", async () => {
    for (const [major, client] of clients(s.bob)) {
      const made = await client.skills.create({
        display_name: major,
        files: [await toFile(Buffer.from(`---\nname: s${major[0]}\n---\nA skill.`), `s${major[0]}/SKILL.md`)],
      });
      expect(made).toMatchObject({ type: 'skill', latest_version_id: expect.any(String) });
      expect(made).not.toHaveProperty('latest_version');
      expect((await client.skills.retrieve(made.id)).latest_version_id).toBe(made.latest_version_id);
      const listed: string[] = [];
      for await (const k of client.skills.list({ limit: 1 })) listed.push(k.id);
      expect(listed[0]).toBe(made.id);
      const beta = await raw(s.bob, `/v1/skills/${made.id}`, { 'anthropic-beta': 'skills-2025-10-02' });
      expect(beta.body).toMatchObject({ id: made.id, latest_version: made.latest_version_id });
    }
    const ga = await raw(s.bob, '/v1/skills');
    expect(Object.keys(ga.body).sort()).toEqual(['data', 'next_page']);
    // Alice sees none of Bob's skills.
    expect((await raw(s.alice, '/v1/skills')).body).toEqual({ data: [], next_page: null });
  });
});
