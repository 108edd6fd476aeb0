import type { IncomingMessage } from 'node:http';
import { namesBeta } from '@keygate/protocol';
import { invalid } from './errors';
import type { Json } from './types';

export { FILES_BETA, SKILLS_BETA } from '@keygate/protocol';

/** True when the request names `beta` in its `anthropic-beta` header: the beta shapes (protocol's beta-forms.ts). */
export function betaForm(req: IncomingMessage, beta: string): boolean {
  return namesBeta(req.headers['anthropic-beta'], beta);
}

/**
 * The GA list page: newest first, `limit` 1–1000 (default 20), `page` the cursor a previous
 * answer's `next_page` gave, `ids` (at most 100, with neither `page` nor `limit`) one page of
 * just those objects.
 */
export function cursorPage<T extends { id: string }>(items: T[], query: URLSearchParams): Json {
  const ids = query.getAll('ids').concat(query.getAll('ids[]'));
  if (ids.length > 0) {
    if (query.has('page') || query.has('limit')) throw invalid('ids: cannot be combined with page or limit.');
    const wanted = new Set(ids);
    if (wanted.size > 100) throw invalid('ids: at most 100 ids.');
    return { data: items.filter((x) => wanted.has(x.id)).reverse(), next_page: null };
  }
  const limit = Number(query.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw invalid('limit: must be between 1 and 1000');
  let list = items.slice().reverse();
  const cursor = query.get('page');
  if (cursor) {
    const at = list.findIndex((x) => x.id === cursor);
    if (at === -1) throw invalid('page: not a next_page value from this list.');
    list = list.slice(at + 1);
  }
  const data = list.slice(0, limit);
  return { data, next_page: list.length > data.length ? (data[data.length - 1]?.id ?? null) : null };
}
