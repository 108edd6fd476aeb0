/** Prints rows as an aligned text table for people. */
export function table(rows: Record<string, unknown>[], columns?: string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? Object.keys(rows[0]!);
  const cell = (v: unknown) =>
    v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join(
    '\n',
  );
}

/** Prints a record as `key: value` lines for people. */
export function details(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .filter(([, v]) => v !== undefined)
    .map(
      ([k, v]) => `${k.padEnd(width)}  ${v === null ? '-' : typeof v === 'object' ? JSON.stringify(v) : v}`,
    )
    .join('\n');
}
