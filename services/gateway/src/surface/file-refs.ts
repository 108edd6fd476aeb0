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
