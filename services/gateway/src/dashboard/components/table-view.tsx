/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import { cellText, type Cell, type Table } from '../table';

const CellView: FC<{ cell: Cell }> = ({ cell }) =>
  typeof cell === 'string' ? cell : <a href={cell.href}>{cell.text}</a>;

/** A plain HTML table (readable without JavaScript), with a link to the same table as CSV. */
export const TableView: FC<{ table: Table; csvHref?: string; csvLabel?: string }> = ({
  table,
  csvHref,
  csvLabel,
}) => (
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
              <th scope="col" class={c.numeric ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {table.rows.length === 0 && (
            <tr>
              <td colspan={table.columns.length}>{table.empty ?? 'Nothing in this period.'}</td>
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
                  <td class={table.columns[i]?.numeric ? 'num' : table.columns[i]?.wrap ? 'wrap' : undefined}>
                    <CellView cell={cell} />
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
        {table.foot && (
          <tfoot>
            <tr>
              {table.foot.map((cell, i) =>
                i === 0 ? <th scope="row">{cellText(cell)}</th> : <td class="num">{cellText(cell)}</td>,
              )}
            </tr>
          </tfoot>
        )}
      </table>
    </div>
  </section>
);
