/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { Prose } from '../components/prose';
import { eur } from '../../billing/invoice-html';
import { billingOverview } from '../../billing/view';
import { PlanActions } from '../components/billing-forms';
import { TableView } from '../components/table-view';
import { costs } from '../data';
import { usd, type Table } from '../table';
import { parseState, rangeOf } from '../view-state';
import type { PageCtx, PageResult } from './page';

type Overview = Awaited<ReturnType<typeof billingOverview>>;
type Plan = Overview['plans'][number];
type Line = NonNullable<Overview['upcoming']>['lines'][number];

const day = (iso: string | null) => (iso ? iso.slice(0, 10) : '');
const limit = (n: number | null, unit = '') =>
  n === null ? 'no default' : `${n.toLocaleString('en-US')}${unit}`;
const seatRule = (p: Plan) =>
  !p.per_seat
    ? 'exactly one seat'
    : `a seat per member, at least ${p.min_seats}${p.max_seats ? `, at most ${p.max_seats}` : ''}`;
const price = (p: Plan) => `${eur(p.price_cents)}${p.per_seat ? ' per seat' : ''} per month`;

const STATE_WORDS: Record<string, string> = {
  trialing: 'free trial',
  active: 'active',
  past_due: 'payment overdue',
  unpaid: 'unpaid',
  canceled: 'canceled',
  paused: 'paused (trial ended without payment)',
  incomplete: 'checkout not finished',
  suspended: 'suspended by the operator',
};

/** What each plan adds over the one before it (by price): its extra features, then its higher defaults. */
export function planAdds(plans: Plan[]): { plan: Plan; over: Plan; features: string[]; numbers: string[] }[] {
  const sorted = [...plans].sort((a, b) => a.price_cents - b.price_cents);
  return sorted.slice(1).map((plan, i) => {
    const over = sorted[i]!;
    const more = (a: number | null, b: number | null) => (a === null ? false : b === null || a > b);
    const l = plan.default_limits;
    const o = over.default_limits;
    const numbers = [
      more(l.requests_per_minute, o.requests_per_minute) &&
        `${limit(l.requests_per_minute)} requests/min per key against ${limit(o.requests_per_minute)}`,
      more(l.input_tokens_per_minute, o.input_tokens_per_minute) &&
        `${limit(l.input_tokens_per_minute)} input tokens/min against ${limit(o.input_tokens_per_minute)}`,
      more(l.output_tokens_per_minute, o.output_tokens_per_minute) &&
        `${limit(l.output_tokens_per_minute)} output tokens/min against ${limit(o.output_tokens_per_minute)}`,
      plan.retention_days > over.retention_days &&
        `call log kept ${plan.retention_days} days against ${over.retention_days}`,
    ].filter((x): x is string => !!x);
    return { plan, over, features: plan.features.filter((f) => !over.features.includes(f)), numbers };
  });
}

const lineRow = (l: Line) => [
  l.description,
  String(l.quantity),
  eur(l.unit_amount_cents),
  l.days === null ? '' : `${l.days}/${l.period_days}`,
  eur(l.amount_cents),
];
const LINE_COLUMNS = [
  { label: 'Description' },
  { label: 'Qty', numeric: true },
  { label: 'Unit (EUR)', numeric: true },
  { label: 'Days', numeric: true },
  { label: 'Amount (EUR)', numeric: true },
];

/**
 * The billing page: plan, state, trial, seats, the upcoming invoice (EUR) beside the month's
 * model usage (USD, never summed), past invoices, the plans compared, and (admins) checkout,
 * portal and cancel. Members see the plan and the trial only.
 */
export async function billingPage(p: PageCtx, notice?: string): Promise<PageResult> {
  const { deps, viewer } = p;
  const admin = viewer.kind === 'admin';
  const month = {
    ...p.scope,
    state: parseState({ period: 'month' }),
    range: rangeOf(parseState({ period: 'month' }), deps.clock()),
  };
  const [o, usage] = await Promise.all([
    billingOverview(deps.billing, viewer.accountId),
    admin ? costs(month, null) : null,
  ]);
  const s = o.subscription;
  const plan = s.plan;
  const cheapest = o.plans.toSorted((a, b) => a.price_cents - b.price_cents)[0];
  const usageCents = usage ? [...usage.values()].reduce((a, b) => a + b, 0) : 0;

  const tables: Table[] = [
    {
      id: 'plans',
      caption: "Plans compared (limits are each key's defaults)",
      columns: [
        'Plan',
        'Price',
        'Seats',
        'Trial days',
        'Requests/min',
        'Input tokens/min',
        'Output tokens/min',
        'Spend cap (USD/month)',
        'Call log kept',
      ].map((label) => ({ label })),
      rows: o.plans.map((c) => [
        c.id === plan?.id ? `${c.name} (current)` : c.name,
        price(c),
        seatRule(c),
        String(c.trial_days),
        limit(c.default_limits.requests_per_minute),
        limit(c.default_limits.input_tokens_per_minute),
        limit(c.default_limits.output_tokens_per_minute),
        c.default_limits.monthly_spend_cap_cents === null
          ? 'none'
          : (c.default_limits.monthly_spend_cap_cents / 100).toFixed(2),
        `${c.retention_days} days`,
      ]),
    },
  ];
  if (admin) {
    const u = o.upcoming;
    tables.unshift(
      {
        id: 'upcoming-invoice',
        caption: u ? `Upcoming invoice, ${day(u.period_start)} to ${day(u.period_end)}` : 'Upcoming invoice',
        columns: LINE_COLUMNS,
        rows: u
          ? [
              ...u.lines.map(lineRow),
              ['Subtotal', '', '', '', eur(u.subtotal_cents)],
              ['Tax (not charged)', '', '', '', eur(u.tax_cents)],
            ]
          : [],
        foot: u ? ['Total', '', '', '', eur(u.total_cents)] : undefined,
        empty: 'Nothing will be billed: the subscription is not running.',
      },
      {
        id: 'invoices',
        caption: 'Past invoices',
        columns: [
          { label: 'Invoice' },
          { label: 'Period' },
          { label: 'Status' },
          { label: 'Total (EUR)', numeric: true },
          { label: 'Paid' },
        ],
        rows: o.invoices.map((i) => [
          { text: i.number, href: `/dashboard/billing/invoices/${i.id}` },
          `${day(i.period_start)} to ${day(i.period_end)}`,
          i.status,
          eur(i.total_cents),
          day(i.paid_at) || 'not yet',
        ]),
        empty: 'No invoices yet: the first is issued when the first paid period ends.',
      },
      {
        id: 'history',
        caption: 'Subscription history',
        columns: ['At', 'From', 'To', 'Plan', 'Cause'].map((label) => ({ label })),
        rows: [...s.transitions]
          .reverse()
          .map((t) => [
            t.at?.replace('T', ' ').slice(0, 19) ?? '',
            t.from ?? '',
            t.to ?? '',
            t.from_plan === t.to_plan ? (t.to_plan ?? '') : `${t.from_plan} → ${t.to_plan}`,
            `${t.cause}${t.cause_ref ? `: ${t.cause_ref}` : ''}`,
          ]),
        empty: 'No changes yet.',
      },
    );
  }

  const trial =
    s.trial.days_left > 0
      ? `${s.trial.days_left} day${s.trial.days_left === 1 ? '' : 's'} left (ends ${day(s.trial.ends_at)})`
      : s.trial.ends_at
        ? `ended ${day(s.trial.ends_at)}`
        : 'none';
  const paidBy =
    s.payment.provider === 'stripe'
      ? 'card, through Stripe'
      : s.payment.provider === 'manual'
        ? `recorded by the operator, paid until ${day(s.paid_until)}`
        : 'not yet';
  const body = (
    <>
      {notice && (
        <p class="banner" role="status">
          <Prose text={notice} />
        </p>
      )}
      <section aria-labelledby="subscription-title">
        <h2 id="subscription-title">Subscription</h2>
        <dl class="facts" data-facts="subscription">
          <div>
            <dt>Plan</dt>
            <dd data-fact="plan">{plan ? `${plan.name}, ${price(plan)}` : 'unknown'}</dd>
          </div>
          <div>
            <dt>State</dt>
            <dd data-fact="state">
              {STATE_WORDS[s.state] ?? s.state} · {s.calls_allowed ? 'calls allowed' : 'calls paused'}
            </dd>
          </div>
          <div>
            <dt>Free trial</dt>
            <dd data-fact="trial">{trial}</dd>
          </div>
          <div>
            <dt>Seats used</dt>
            <dd data-fact="seats">
              {s.seats.members} of {s.seats.max ?? 'unlimited'} ({s.seats.charged} charged)
            </dd>
          </div>
          <div>
            <dt>Seat rules</dt>
            <dd data-fact="seat-rules">{plan ? seatRule(plan) : ''}</dd>
          </div>
          {s.current_period && (
            <div>
              <dt>Current period</dt>
              <dd data-fact="period">
                {day(s.current_period.start)} to {day(s.current_period.end)}
              </dd>
            </div>
          )}
          <div>
            <dt>Paid by</dt>
            <dd data-fact="payment">{paidBy}</dd>
          </div>
          {s.cancel_at_period_end && (
            <div>
              <dt>Cancels</dt>
              <dd data-fact="cancels">at the period's end, {day(s.current_period?.end ?? null)}</dd>
            </div>
          )}
        </dl>
      </section>
      {admin && <PlanActions csrf={viewer.csrf} subscription={s} plans={o.plans} />}
      {admin && (
        <>
          <TableView table={tables[0]!} csvHref={p.csv('upcoming-invoice')} />
          <p class="note" data-usage-usd={usd(usageCents)}>
            Beside it, not part of it: model usage this month so far is <strong>{usd(usageCents)} USD</strong>{' '}
            (estimated from list prices), billed by the provider in USD and never added to this EUR
            subscription. <a href="/dashboard?period=month">See it on the overview</a>.
          </p>
          {tables.slice(1, 3).map((t) => (
            <TableView table={t} csvHref={p.csv(t.id)} />
          ))}
        </>
      )}
      <TableView table={tables.at(-1)!} csvHref={p.csv('plans')} />
      <section aria-labelledby="adds-title">
        <h2 id="adds-title">What each plan includes</h2>
        <ul data-plan-adds>
          {cheapest && (
            <li>
              <strong>{cheapest.name}</strong> includes {cheapest.features.join(', ')}.
            </li>
          )}
          {planAdds(o.plans).map((a) => (
            <li>
              <strong>{a.plan.name}</strong> adds over {a.over.name}:{' '}
              {a.features.join(', ') || 'nothing listed'}
              {a.numbers.length > 0 && ` (${a.numbers.join('; ')})`}.
            </li>
          ))}
        </ul>
      </section>
    </>
  );
  return { title: 'Billing', section: '/dashboard/billing', tables, body, periodless: true };
}
