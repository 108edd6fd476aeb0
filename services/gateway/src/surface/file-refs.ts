import type { Principal } from '../auth/resolver';
import type { JsonBody } from '../proxy/json-body';
import { notFound, visibleIds, type Objects } from './ownership';

/**
 * The `file_id`s a request body refers to, wherever they sit (document and image sources,
 * container uploads, blocks Keygate does not know). Iterative, like the PDF walk. `text` reads
 * a string of the parsed body as its value (proxy/json-body.ts).
 */
export function fileRefs(value: unknown, text: (s: string) => string = (s) => s): string[] {
  const ids = new Set<string>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    const obj = v as Record<string, unknown>;
    for (const key in obj) {
      const item = obj[key];
      if (key === 'file_id' && typeof item === 'string') ids.add(text(item));
      else if (typeof item === 'object') stack.push(item);
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

/**
 * The hook the messages route calls with the body it parsed. The walk reads the parsed keys, so
 * a key written with escapes (`"file\u005fid"`, which the provider reads as `file_id`) is found
 * too; a search of the raw bytes for `"file_id"` missed it.
 */
export function fileRefCheck(objects: Objects) {
  return function checkFileRefs(p: Principal, body: JsonBody): Promise<void> | undefined {
    if (p.memberRole === 'admin') return undefined;
    const ids = fileRefs(body.value, (s) => body.text(s));
    return ids.length === 0 ? undefined : assertFileRefs(objects, p, ids);
  };
}
