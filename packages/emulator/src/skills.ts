import { EmulatorError, invalid } from './errors';
import { Readable } from 'node:stream';
import { jsonHeaders, sendError, sendJson, type Exchange } from './http';
import { randomBase62 } from './ids';
import { betaForm, cursorPage, SKILLS_BETA } from './ga-forms';
import type { Json } from './types';

/**
 * Skills (`/v1/skills`): create (multipart: `display_name` and the skill's `files[]`), list,
 * retrieve, delete, in the GA shapes and, with beta `skills-2025-10-02`, the beta ones
 * (ga-forms.ts). Shapes from the official TypeScript SDK 1.11's `resources/skills` and
 * `resources/beta/skills` types, read 2026-11-25 and 2026-11-29. Versions are not emulated.
 */
type StoredSkill = {
  type: 'skill';
  id: string;
  display_name: string;
  source: 'custom';
  latest_version_id: string;
  created_at: string;
  updated_at: string;
};

export class SkillStore {
  readonly skills = new Map<string, StoredSkill>();

  get(id: string): StoredSkill {
    const skill = this.skills.get(id);
    if (!skill) throw new EmulatorError('not_found_error', `Skill not found: ${id}`);
    return skill;
  }
}

/** The beta shape names the newest version `latest_version`; the GA one `latest_version_id`. */
function shown(skill: StoredSkill, beta: boolean): Json {
  if (!beta) return skill;
  const { latest_version_id, ...rest } = skill;
  return { ...rest, latest_version: latest_version_id };
}

export function handleSkills(ex: Exchange, store: SkillStore, path: string, query: URLSearchParams): boolean {
  const m = /^\/v1\/skills(?:\/([^/]+))?$/.exec(path);
  if (!m) return false;
  const [, id] = m;
  const method = ex.req.method;
  const beta = betaForm(ex.req, SKILLS_BETA);
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
        const skill: StoredSkill = {
          type: 'skill',
          id: `skill_01${randomBase62(22)}`,
          display_name: String(form.get('display_name') ?? ''),
          source: 'custom',
          latest_version_id: String(Date.now()),
          created_at: now,
          updated_at: now,
        };
        store.skills.set(skill.id, skill);
        json(shown(skill, beta));
      })
      .catch((err: Error) => sendError(ex, invalid(`Could not read the multipart body: ${err.message}`)));
    return true;
  }
  if (!id && method === 'GET') {
    // Both forms page with `page` / `next_page`; the beta one also says `has_more`.
    const p = cursorPage([...store.skills.values()], query) as {
      data: StoredSkill[];
      next_page: string | null;
    };
    const data = p.data.map((k) => shown(k, beta));
    json(
      beta
        ? { data, has_more: p.next_page !== null, next_page: p.next_page }
        : { data, next_page: p.next_page },
    );
  } else if (id && method === 'GET') json(shown(store.get(id), beta));
  else if (id && method === 'DELETE') {
    store.get(id);
    store.skills.delete(id);
    json({ id, type: 'skill_deleted' });
  } else throw new EmulatorError('not_found_error', `Not found: ${method} ${path}`);
  return true;
}
