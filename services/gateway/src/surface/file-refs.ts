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
