import { toFile } from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { KEY, useEmulator } from './helpers';

/**
 * Files and Skills GA (sources in @keygate/protocol's beta-forms.ts, read 2026-11-29): without
 * the beta value the GA shapes, with it the beta shapes.
 */
const ctx = useEmulator();
const FILES_BETA = { 'anthropic-beta': 'files-api-2025-04-14' };
const SKILLS_BETA = { 'anthropic-beta': 'skills-2025-10-02' };

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${ctx.emulator.url}${path}`, {
    headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', ...headers },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function upload(
  name: string,
  extra: Record<string, string> = {},
  headers: Record<string, string> = {},
) {
  const form = new FormData();
  form.set('file', new Blob([name], { type: 'text/plain' }), `${name}.txt`);
  for (const [k, v] of Object.entries(extra)) form.set(k, v);
  const res = await fetch(`${ctx.emulator.url}/v1/files`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', ...headers },
    body: form,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { id: string } };
}

describe('files: GA and beta forms', () => {
  it('GA: expires_at from expires_in_seconds (null without), page/next_page paging the SDK follows', async () => {
    const lasting = await ctx.client.files.upload({
      file: await toFile(Buffer.from('a'), 'a.txt', { type: 'text/plain' }),
    });
    expect(lasting.expires_at).toBeNull();
    const expiring = await ctx.client.files.upload({
      file: await toFile(Buffer.from('b'), 'b.txt', { type: 'text/plain' }),
      expires_in_seconds: 7200,
    });
    expect(Date.parse(expiring.expires_at!) - Date.parse(expiring.created_at)).toBe(7_200_000);
    const ids = (await upload('c')).body.id;

    const first = await get('/v1/files?limit=2');
    expect(Object.keys(first.body).sort()).toEqual(['data', 'next_page']);
    expect((first.body.data as { id: string }[]).map((f) => f.id)).toEqual([ids, expiring.id]);
    expect(first.body.next_page).toBe(expiring.id);
    const seen: string[] = [];
    for await (const f of ctx.client.files.list({ limit: 1 })) seen.push(f.id);
    expect(seen.slice(0, 3)).toEqual([ids, expiring.id, lasting.id]);

    const only = await get(`/v1/files?ids=${lasting.id}&ids=${ids}`);
    expect((only.body.data as { id: string }[]).map((f) => f.id)).toEqual([ids, lasting.id]);
    expect(only.body.next_page).toBeNull();
  });

  it('beta: the id cursor page and no expiry field', async () => {
    const a = await upload('beta-a', {}, FILES_BETA);
    expect(a.status).toBe(200);
    expect(a.body).not.toHaveProperty('expires_at');
    const b = await upload('beta-b', {}, FILES_BETA);
    const page = await get('/v1/files?limit=1', FILES_BETA);
    expect(page.body).toEqual({
      data: [expect.objectContaining({ id: b.body.id })],
      has_more: true,
      first_id: b.body.id,
      last_id: b.body.id,
    });
    expect((page.body.data as object[])[0]).not.toHaveProperty('expires_at');
    const next = await get(`/v1/files?limit=1&after_id=${b.body.id}`, FILES_BETA);
    expect((next.body.data as { id: string }[])[0]?.id).toBe(a.body.id);
    expect((await get(`/v1/files/${a.body.id}`)).body).toHaveProperty('expires_at', null);
  });

  it.each(['59', '7776001', 'soon'])('refuses expires_in_seconds=%s', async (value) => {
    const res = await upload('bad', { expires_in_seconds: value });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: { type: 'invalid_request_error', message: expect.stringContaining('expires_in_seconds') },
    });
  });

  it('refuses a page cursor it never gave, and ids with page or limit', async () => {
    expect((await get('/v1/files?page=file_nope')).status).toBe(400);
    const res = await get('/v1/files?ids=file_x&limit=2');
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('ids: cannot be combined');
  });
});

describe('skills: GA and beta forms', () => {
  it('GA names the newest version latest_version_id, the beta latest_version; both page with next_page', async () => {
    const made = await ctx.client.skills.create({
      display_name: 'ga',
      files: [await toFile(Buffer.from('---\nname: ga\n---\nGA.'), 'ga/SKILL.md')],
    });
    expect(made.latest_version_id).toEqual(expect.any(String));
    expect(made).not.toHaveProperty('latest_version');
    const beta = await get(`/v1/skills/${made.id}`, SKILLS_BETA);
    expect(beta.body).toMatchObject({ id: made.id, latest_version: made.latest_version_id });
    expect(beta.body).not.toHaveProperty('latest_version_id');
    const list = await get('/v1/skills?limit=1');
    expect(Object.keys(list.body).sort()).toEqual(['data', 'next_page']);
    const betaList = await get('/v1/skills?limit=1', SKILLS_BETA);
    expect(betaList.body).toMatchObject({ has_more: expect.any(Boolean), next_page: null });
    const listed: string[] = [];
    for await (const k of ctx.client.skills.list()) listed.push(k.id);
    expect(listed).toContain(made.id);
  });
});
