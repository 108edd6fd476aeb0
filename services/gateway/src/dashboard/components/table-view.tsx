/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import { cellText, type Cell, type Column, type Table } from '../table';

const CellView: FC<{ cell: Cell }> = ({ cell }) =>
  typeof cell === 'string' ? cell : <a href={cell.href}>{cell.text}</a>;

const cellClass = (c: Column | undefined) =>
  [c?.numeric ? 'num' : c?.wrap ? 'wrap' : '', c?.detail ? 'detail' : ''].filter(Boolean).join(' ') ||
  undefined;

/**
 * A row's detail columns, opened on the row. The cells themselves stay in the row, hidden, so the
 * table read from the page is the CSV's; this cell is the page's alone (data-screen-only).
 */
const DetailsView: FC<{ columns: Column[]; row: Cell[] }> = ({ columns, row }) => {
  const shown = columns
    .map((c, i) => [c, row[i]] as const)
    .filter(([c, cell]) => c.detail && cell !== undefined && cellText(cell) !== '');
  return (
    <td class="more" data-screen-only>
      {shown.length > 0 && (
        <details>
          <summary>Details</summary>
          <dl>
            {shown.map(([c, cell]) => (
              <>
                <dt>{c.label}</dt>
                <dd>
                  <CellView cell={cell!} />
                </dd>
              </>
            ))}
          </dl>
        </details>
      )}
    </td>
  );
};

/** A plain HTML table (readable without JavaScript), with a link to the same table as CSV. */
export const TableView: FC<{ table: Table; csvHref?: string; csvLabel?: string }> = ({
  table,
  csvHref,
  csvLabel,
}) => {
  const details = table.columns.some((c) => c.detail);
  return (
    <section class="table-block" aria-labelledby={`${table.id}-caption`}>
      <div class="table-head">
        <h2 id={`${table.id}-caption`}>{table.caption}</h2>
        {csvHref && (
          <a class="csv" href={csvHref} download>
            {csvLabel ?? 'Export CSV'}
            <span class="visually-hidden"> of {table.caption}</span>
          </a>
        )}
      </div>
      <div class="scroll" role="region" aria-label={table.caption} tabindex={0}>
        <table id={table.id} data-table={table.id}>
          <thead>
            <tr>
              {table.columns.map((c) => (
                <th scope="col" class={cellClass(c)}>
                  {c.label}
                </th>
              ))}
              {details && (
                <th scope="col" class="more" data-screen-only>
                  <span class="visually-hidden">Details</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {table.rows.length === 0 && (
              <tr>
                <td colspan={table.columns.length + (details ? 1 : 0)}>
                  {table.empty ?? 'Nothing in this period.'}
                </td>
              </tr>
            )}
            {table.rows.map((row) => (
              <tr>
                {row.map((cell, i) =>
                  i === 0 ? (
                    <th scope="row">
                      <CellView cell={cell} />
                    </th>
                  ) : (
                    <td class={cellClass(table.columns[i])}>
                      <CellView cell={cell} />
                    </td>
                  ),
                )}
                {details && <DetailsView columns={table.columns} row={row} />}
              </tr>
            ))}
          </tbody>
          {table.foot && (
            <tfoot>
              <tr>
                {table.foot.map((cell, i) =>
                  i === 0 ? (
                    <th scope="row">{cellText(cell)}</th>
                  ) : (
                    <td class={table.columns[i]?.detail ? 'num detail' : 'num'}>{cellText(cell)}</td>
                  ),
                )}
                {details && <td class="more" data-screen-only />}
              </tr>
            </tfoot>
          )}
        </table>
      </div>
    </section>
  );
};
