import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import { GatewayError } from '../lib/errors';

export type Cell = string | { text: string; href: string };

export interface Column {
  label: string;
  numeric?: boolean;
  /** Long text that may wrap onto several lines instead of widening the table. */
  wrap?: boolean;
  /**
   * Detail a reader opens per row: on the page it shows in the row's Details cell, not as a
   * column of its own (the table stays as wide as the screen); the CSV has it as a column.
   */
  detail?: boolean;
}

/** A table as the page shows it: the HTML view and the CSV export both render this, cell for cell. */
export interface Table {
  id: string;
  caption: string;
  columns: Column[];
  rows: Cell[][];
  foot?: Cell[];
  empty?: string;
  /** For a table shown a page at a time: every row, batch by batch, for the CSV export. */
  allRows?: () => AsyncIterable<Cell[][]>;
}

export const cellText = (c: Cell) => (typeof c === 'string' ? c : c.text);

/**
 * A spreadsheet reads a cell that starts with = + - @ tab or CR as a formula (`=HYPERLINK(…)`
 * from a model name or a group id): such a cell gets a leading apostrophe, as OWASP's CSV
 * injection advice has it. A plain number (`-12.5`) cannot be a formula and stays as it is.
 */
export function csvField(s: string): string {
  const safe = /^[=+\-@\t\r]/.test(s) && !/^[-+]?\d[\d,]*(\.\d+)?%?$/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/**
 * The table with the columns named `labels` moved to position `at`, in rows and footer alike:
 * what a reader looks for first stays on screen on a laptop, the rest scrolls.
 */
export function columnsAt(table: Table, labels: string[], at: number): Table {
  const moved = labels.map((l) => table.columns.findIndex((c) => c.label === l)).filter((i) => i >= 0);
  const order = table.columns.map((_, i) => i).filter((i) => !moved.includes(i));
  order.splice(at, 0, ...moved);
  const pick = <T>(cells: T[]) => order.map((i) => cells[i]!);
  return {
    ...table,
    columns: pick(table.columns),
    rows: table.rows.map(pick),
    ...(table.foot ? { foot: pick(table.foot) } : {}),
  };
}

const csvLine = (cells: Cell[]) => `${cells.map((c) => csvField(cellText(c))).join(',')}\r\n`;

/** Streams one of the page's tables as CSV, header and footer rows included. */
export function csvResponse(c: Context, tables: Table[], id: string | undefined, name: string): Response {
  const table = tables.find((t) => t.id === id);
  if (!table)
    throw new GatewayError(
      'not_found_error',
      `No table '${id ?? ''}' on this page; tables: ${tables.map((t) => t.id).join(', ')}.`,
    );
  c.header('content-type', 'text/csv; charset=utf-8');
  c.header('content-disposition', `attachment; filename="${name}-${table.id}.csv"`);
  return stream(c, async (s) => {
    await s.write(csvLine(table.columns.map((col) => col.label)));
    if (table.allRows) {
      for await (const batch of table.allRows()) await s.write(batch.map(csvLine).join(''));
    } else {
      for (let i = 0; i < table.rows.length; i += 500)
        await s.write(
          table.rows
            .slice(i, i + 500)
            .map(csvLine)
            .join(''),
        );
    }
    if (table.foot) await s.write(csvLine(table.foot));
  });
}

export const num = (n: number) => Math.round(n).toLocaleString('en-US');
/** USD from cents, to a hundredth of a cent. */
export const usd = (cents: number) => (cents / 100).toFixed(4);
export const pct = (part: number, whole: number) =>
  whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '0.0%';
export const when = (d: Date | null) => (d ? d.toISOString().replace('T', ' ').slice(0, 19) : 'never');
