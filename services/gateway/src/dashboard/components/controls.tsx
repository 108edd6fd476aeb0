/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import { PERIODS, queryOf, SPLITS, type Period, type Split, type ViewState } from '../view-state';

/** Hidden fields carrying the rest of the state through a GET form. */
export const KeptFields: FC<{ state: ViewState; except: string[] }> = ({ state, except }) => (
  <>
    {Object.entries(state)
      .filter(
        ([k, v]) => v && !except.includes(k) && !(state.period !== 'custom' && (k === 'from' || k === 'to')),
      )
      .map(([k, v]) => (
        <input type="hidden" name={k} value={String(v)} />
      ))}
  </>
);

/** Today, 7 days, 30 days, this month, last month as links; a custom range as a GET form. */
export const PeriodPicker: FC<{ state: ViewState; path: string; rangeLabel: string; zone: string }> = ({
  state,
  path,
  rangeLabel,
  zone,
}) => (
  <nav class="period" aria-label="Period">
    <ul class="pills">
      {(Object.keys(PERIODS) as Period[])
        .filter((p) => p !== 'custom')
        .map((p) => (
          <li>
            <a
              href={path + queryOf(state, { period: p })}
              aria-current={state.period === p ? 'page' : undefined}
            >
              {PERIODS[p]}
            </a>
          </li>
        ))}
    </ul>
    <form method="get" action={path} class="custom-period">
      <KeptFields state={state} except={['period', 'from', 'to']} />
      <input type="hidden" name="period" value="custom" />
      <label>
        From <input type="date" name="from" value={state.from ?? ''} required />
      </label>
      <label>
        To <input type="date" name="to" value={state.to ?? ''} required />
      </label>
      <button type="submit">Show</button>
    </form>
    <p class="range">
      <span class="visually-hidden">Showing </span>
      {rangeLabel} <span class="zone">(days in {zone})</span>
    </p>
  </nav>
);

export const SplitSwitch: FC<{ state: ViewState; path: string }> = ({ state, path }) => (
  <nav class="split" aria-label="Split the charts by">
    <span>Split by:</span>
    <ul class="pills">
      {(Object.keys(SPLITS) as Split[]).map((s) => (
        <li>
          <a href={path + queryOf(state, { split: s })} aria-current={state.split === s ? 'true' : undefined}>
            {SPLITS[s]}
          </a>
        </li>
      ))}
    </ul>
  </nav>
);

/** A form that posts with the session's CSRF token. */
export const PostForm: FC<{ action: string; csrf: string; class?: string; children?: unknown }> = (p) => (
  <form method="post" action={p.action} class={p.class}>
    <input type="hidden" name="_csrf" value={p.csrf} />
    {p.children as never}
  </form>
);

/** A budget's or spend limit's reset period, as the forms post it (`period`). */
export const PeriodSelect: FC<{ label: string }> = ({ label }) => (
  <label>
    {label}
    <select name="period">
      <option value="monthly">monthly</option>
      <option value="weekly">weekly</option>
      <option value="daily">daily</option>
    </select>
  </label>
);
