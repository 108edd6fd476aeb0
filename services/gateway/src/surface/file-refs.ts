import type { Principal } from '../auth/resolver';
import { databaseUnavailable } from '../lib/database-unavailable';
import { databaseUnreachable } from '../lib/errors';
import { parseJson } from '../pipeline/body-reader';
import { notFound, visibleIds, type Objects } from './ownership';

/**
 * The `file_id`s a request body refers to, wherever they sit (document and image sources,
 * container uploads, blocks Keygate does not know). Iterative, like the PDF walk.
 */
export function fileRefs(value: unknown): string[] {
  const ids = new Set<string>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    for (const [key, item] of Object.entries(v)) {
      if (key === 'file_id' && typeof item === 'string') ids.add(item);
      else stack.push(item);
    }
  }
  return [...ids];
}

/** A file the caller may not use answers as a missing one would, before the provider sees it. */
export async function assertFileRefs(objects: Objects, p: Principal, ids: string[]): Promise<void> {
  if (ids.length === 0 || p.memberRole === 'admin') return;
  const visible = await visibleIds(objects, p, ids);
  const hidden = ids.find((id) => !visible.has(id));
  if (hidden !== undefined) throw notFound('file', hidden);
}

/** The hook the messages route calls for a body that mentions `file_id` (rare: one scan otherwise). */
export function fileRefCheck(objects: Objects) {
  return function checkFileRefs(p: Principal, body: Buffer): Promise<void> | undefined {
    if (p.memberRole === 'admin' || !body.includes('"file_id"')) return undefined;
    return parseJson(body)
      .then((value) => assertFileRefs(objects, p, fileRefs(value)))
      .catch((error) => {
        // Whose files they are is read from PostgreSQL: while it is unreachable, a 503 to retry.
        throw databaseUnavailable(error) ? databaseUnreachable('The files this call refers to') : error;
      });
  };
}
