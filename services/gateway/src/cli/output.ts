// C0 and C1 controls (ESC, CR, LF, BEL…), DEL and the bidirectional overrides: from a member's
// model name or group id they could forge rows or retitle the operator's terminal.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** A value as one line of plain text for a terminal. */
export function printable(v: unknown): string {
  const text = v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return text.replace(CONTROLS, '');
}

/** Prints rows as an aligned text table for people. */
export function table(rows: Record<string, unknown>[], columns?: string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? Object.keys(rows[0]!);
  const cell = printable;
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
    .map(([k, v]) => `${printable(k).padEnd(width)}  ${printable(v)}`)
    .join('\n');
}
