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
  /** The smallest step of the value scale that `format` shows apart (1 for whole tokens). */
  minStep: number;
}

/** Gridlines above the baseline; the scale's labels sit on them. */
const STEPS = 4;

/**
 * A value scale with round steps (1, 2 or 5 times a power of ten) whose top is at or above
 * `max`: the bars are drawn against it, so a gridline reads as its label says.
 */
export function valueScale(max: number, minStep: number): number[] {
  const raw = Math.max(max / STEPS, minStep);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(minStep, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw * (1 - 1e-9))!);
  return Array.from({ length: STEPS }, (_, i) => Number((step * (i + 1)).toPrecision(12)));
}

/** Which days carry a visible label: at most about seven, evenly spaced, the last one among them. */
export function labelledDays(count: number): Set<number> {
  const every = Math.max(1, Math.ceil(count / 7));
  const shown = new Set<number>();
  for (let i = count - 1; i >= 0; i -= every) shown.add(i);
  return shown;
}

/**
 * A stacked column chart drawn by Charts.css from a plain table (served from our origin), with
 * a value scale beside it and the days under it: with styles off, or to a screen reader, it is
 * the table of the figures themselves.
 */
export const StackedChart: FC<ChartProps> = ({ id, caption, days, series, values, format, minStep }) => {
  const v = (day: string, s: string) => values.get(`${day}|${s}`) ?? 0;
  const max = Math.max(0, ...days.map((d) => series.reduce((t, s) => t + v(d, s.id), 0)));
  const ticks = valueScale(max, minStep);
  const top = ticks.at(-1)!;
  const labelled = labelledDays(days.length);
  return (
    <figure class="chart" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{caption}</figcaption>
      <ul class="charts-css legend legend-inline legend-square" aria-label={`Legend: ${caption}`}>
        {series.map((s) => (
          <li>{s.label}</li>
        ))}
      </ul>
      {series.length === 0 && <p class="note">No usage in this period.</p>}
      <div class="chart-plot">
        {/* The scale repeats what the table holds; screen readers read the table. */}
        <ol class="chart-scale" aria-hidden="true" data-scale-max={format(top)}>
          <li style="--at: 0">{format(0)}</li>
          {ticks.map((t) => (
            <li style={`--at: ${(t / top).toFixed(4)}`}>{format(t)}</li>
          ))}
        </ol>
        <div class="chart-box">
          <table
            id={id}
            class="charts-css column multiple stacked show-labels hide-data data-spacing-1 show-primary-axis show-4-secondary-axes"
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
                    <span class={labelled.has(i) ? 'day' : 'visually-hidden'}>{day.slice(5)}</span>
                  </th>
                  {series.map((s) => (
                    <td style={`--size: ${(v(day, s.id) / top).toFixed(4)}`}>
                      <span class="data">{format(v(day, s.id))}</span>
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
    </figure>
  );
};
