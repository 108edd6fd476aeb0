import { EmulatorError, invalid } from './errors';
import { Readable } from 'node:stream';
import { jsonHeaders, sendError, sendJson, type Exchange } from './http';
import { randomBase62 } from './ids';
import { page } from './files';
import type { Json } from './types';

/**
 * Skills (`/v1/skills`, beta `skills-2025-10-02`): create (multipart: `display_name` and the
 * skill's `files[]`), list, retrieve, delete. Shapes from the official TypeScript SDK 1.11's
 * `resources/beta/skills` types, read 2026-11-25. Versions are not emulated.
 */
export class SkillStore {
  readonly skills = new Map<string, Json & { id: string }>();

  get(id: string): Json & { id: string } {
    const skill = this.skills.get(id);
    if (!skill) throw new EmulatorError('not_found_error', `Skill not found: ${id}`);
    return skill;
  }
}

export function handleSkills(ex: Exchange, store: SkillStore, path: string, query: URLSearchParams): boolean {
  const m = /^\/v1\/skills(?:\/([^/]+))?$/.exec(path);
  if (!m) return false;
  const [, id] = m;
  const method = ex.req.method;
  const json = (value: unknown) => sendJson(ex, 200, JSON.stringify(value), jsonHeaders(ex.requestId, false));
  if (!id && method === 'POST') {
    const type = String(ex.req.headers['content-type'] ?? '');
    if (!type.startsWith('multipart/form-data')) throw invalid('Expected a multipart/form-data body.');
    new Request('http://emulator.invalid/v1/skills', {
      method: 'POST',
      headers: { 'content-type': type },
      body: Readable.toWeb(ex.req) as ReadableStream,
      duplex: 'half',
    } as RequestInit)
      .formData()
      .then((form) => {
        const now = new Date().toISOString();
        const skill = {
          type: 'skill',
          id: `skill_01${randomBase62(22)}`,
          display_name: String(form.get('display_name') ?? ''),
          source: 'custom',
          latest_version: String(Date.now()),
          created_at: now,
          updated_at: now,
        };
        store.skills.set(skill.id, skill);
        json(skill);
      })
      .catch((err: Error) => sendError(ex, invalid(`Could not read the multipart body: ${err.message}`)));
    return true;
  }
  if (!id && method === 'GET') json(page([...store.skills.values()], query));
  else if (id && method === 'GET') json(store.get(id));
  else if (id && method === 'DELETE') {
    store.get(id);
    store.skills.delete(id);
    json({ id, type: 'skill_deleted' });
  } else throw new EmulatorError('not_found_error', `Not found: ${method} ${path}`);
  return true;
}
