// C0 and C1 controls (ESC, CR, LF, BEL…), DEL and the bidirectional overrides: from a member's
// model name, a price catalog entry or an identity provider's answer they could forge rows or
// retitle and rewrite the operator's terminal. Shown escaped (\x1b, \u202e), so they are seen.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const CONTROLS_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// JSON.stringify escapes C0 already; C1, DEL and the overrides pass through it raw.
const JSON_RAW = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const escaped = (ch: string) => {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`;
};

/** A value as one line of plain text for a terminal: every control character shown escaped. */
export function printable(v: unknown): string {
  const text = v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return text.replace(CONTROLS, escaped);
}

/** Text for a terminal that may span lines: keeps \n and \t, shows every other control escaped. */
export function terminalText(text: string): string {
  return text.replace(CONTROLS_BUT_LINES, escaped);
}

/** `--json` output: the same JSON value, with the controls JSON leaves raw written as \u escapes. */
export function terminalJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? 'null').replace(
    JSON_RAW,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
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
