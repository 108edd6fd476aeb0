/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { Prose } from './prose';
import type { FC } from 'hono/jsx';
import type { standingBanner } from '../../billing/view';

type Standing = Awaited<ReturnType<typeof standingBanner>>;

const TITLES: Record<string, string> = {
  blocked: 'Model calls are paused',
  trial_will_end: 'The free trial ends soon',
  past_due: 'A payment is overdue',
};

/** On every page of an account: why calls stop (or will), and what to do; nothing while all is well. */
export const StandingBanner: FC<Standing> = ({ state, banner }) => {
  const message =
    banner?.message ??
    (state === 'suspended'
      ? 'The operator suspended this account: model calls are refused. Ask your Keygate operator.'
      : null);
  if (!message) return null;
  const kind = banner?.kind ?? 'blocked';
  return (
    <aside
      class={`banner standing ${kind === 'trial_will_end' ? 'soon' : 'stop'}`}
      aria-labelledby="standing-title"
      data-standing={kind}
    >
      <h2 id="standing-title">{TITLES[kind] ?? 'Billing'}</h2>
      <p>
        <Prose text={message} /> <a href="/dashboard/billing">Open billing</a>
      </p>
    </aside>
  );
};
