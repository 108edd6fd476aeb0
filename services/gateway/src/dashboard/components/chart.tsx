/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';

export interface ChartProps {
  id: string;
  caption: string;
  days: string[];
  series: { id: string; label: string }[];
  /** Values by `${day}|${series id}`. */
  values: Map<string, number>;
  format: (n: number) => string;
}

/**
 * A stacked column chart drawn by Charts.css from a plain table (served from our origin): with
 * styles off, or to a screen reader, it is the table of the figures themselves.
 */
export const StackedChart: FC<ChartProps> = ({ id, caption, days, series, values, format }) => {
  const v = (day: string, s: string) => values.get(`${day}|${s}`) ?? 0;
  const max = Math.max(1, ...days.map((d) => series.reduce((t, s) => t + v(d, s.id), 0)));
  const every = Math.ceil(days.length / 6);
  return (
    <figure class="chart" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{caption}</figcaption>
      <ul class="charts-css legend legend-inline legend-square" aria-label={`Legend: ${caption}`}>
        {series.map((s) => (
          <li>{s.label}</li>
        ))}
      </ul>
      {series.length === 0 && <p class="note">No usage in this period.</p>}
      <div class="chart-box">
        <table
          id={id}
          class="charts-css column multiple stacked show-labels hide-data data-spacing-1 show-primary-axis"
        >
          <caption>{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              {series.map((s) => (
                <th scope="col">{s.label}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {days.map((day, i) => (
              <tr>
                <th scope="row">
                  {/* Charts.css's own hide-label breaks the layout of long series; only some labels are shown. */}
                  <span class={i % every === 0 ? undefined : 'visually-hidden'}>{day.slice(5)}</span>
                </th>
                {series.map((s) => (
                  <td style={`--size: ${(v(day, s.id) / max).toFixed(4)}`}>
                    <span class="data">{format(v(day, s.id))}</span>
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
};
