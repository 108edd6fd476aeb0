import type { CatalogPlan } from './catalog-queries';
import type { InvoiceLine, InvoiceRecord } from './invoice-queries';
import { changeSubscription, requireSubscription, type BillingDeps } from './lifecycle';
import { addMonths, periodLines, totals } from './proration';

/** The lines of [start, end) for an account: its plan at the start, the plan changes and seat changes inside. */
export async function linesFor(
  deps: Pick<BillingDeps, 'store'>,
  accountId: string,
  currentPlanId: string,
  start: Date,
  end: Date,
): Promise<InvoiceLine[]> {
  const changes = (await deps.store.subscriptions.transitions(accountId, start, end)).filter(
    (t) => t.fromPlan !== t.toPlan && t.toPlan,
  );
  const plans = new Map((await deps.store.catalog.list()).map((p) => [p.id, p]));
  const plan = (id: string): CatalogPlan => {
    const p = plans.get(id);
    if (!p) throw new Error(`plan ${id} is not in the catalog`);
    return p;
  };
  return periodLines({
    start,
    end,
    plan: plan(changes[0]?.fromPlan ?? currentPlanId),
    planChanges: changes.map((c) => ({ at: c.at, plan: plan(c.toPlan!) })),
    seats: await deps.store.invoices.seats(accountId, start, end),
  });
}

const BILLED = new Set(['active', 'past_due', 'unpaid']);

/** Issues the invoice of every period that ended by `now` and rolls the subscription to the next one. */
export async function issueDueInvoices(deps: BillingDeps, accountId: string, now: number): Promise<number> {
  let issued = 0;
  for (let guard = 0; guard < 36; guard++) {
    const s = await requireSubscription(deps, accountId);
    const { currentPeriodStart: start, currentPeriodEnd: end } = s;
    if (!start || !end || end.getTime() > now || !BILLED.has(s.state)) break;
    const lines = await linesFor(deps, accountId, s.planId, start, end);
    const invoice = await deps.store.invoices.issue(
      { accountId, periodStart: start, periodEnd: end, currency: 'EUR', ...totals(lines), lines },
      'clock',
    );
    if (invoice) issued += 1;
    if (!s.stripeSubscriptionId && s.paidUntil && s.paidUntil >= end)
      await deps.store.invoices.markPaid(accountId, end, new Date(now), null);
    if (s.cancelAtPeriodEnd) break;
    await changeSubscription(deps, accountId, { kind: 'clock', actor: 'clock', ref: 'period_end' }, (cur) =>
      cur.currentPeriodEnd?.getTime() === end.getTime()
        ? { currentPeriodStart: end, currentPeriodEnd: addMonths(end, 1) }
        : null,
    );
  }
  return issued;
}

export interface UpcomingInvoice {
  periodStart: Date;
  periodEnd: Date;
  currency: 'EUR';
  lines: InvoiceLine[];
  subtotalCents: number;
  taxCents: number;
  totalCents: number;
}

/** The invoice the current period is heading for, from the changes made so far; null when nothing will be billed. */
export async function upcomingInvoice(deps: BillingDeps, accountId: string): Promise<UpcomingInvoice | null> {
  const s = await requireSubscription(deps, accountId);
  let start = s.currentPeriodStart;
  let end = s.currentPeriodEnd;
  if (s.state === 'trialing' && s.trialEndsAt && !start) {
    start = s.trialEndsAt;
    end = addMonths(start, 1);
  }
  if (
    !start ||
    !end ||
    (!BILLED.has(s.state) && s.state !== 'trialing') ||
    (s.cancelAtPeriodEnd && end.getTime() <= deps.clock())
  )
    return null;
  const lines = await linesFor(deps, accountId, s.planId, start, end);
  return { periodStart: start, periodEnd: end, currency: 'EUR', lines, ...totals(lines) };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function invoiceLineJson(l: InvoiceLine) {
  return {
    description: l.description,
    quantity: l.quantity,
    unit_amount_cents: l.unitAmountCents,
    days: l.days,
    period_days: l.periodDays,
    amount_cents: l.amountCents,
  };
}

export function invoiceJson(i: InvoiceRecord) {
  return {
    id: i.id,
    type: 'invoice' as const,
    number: i.number,
    status: i.status,
    currency: i.currency,
    period_start: iso(i.periodStart),
    period_end: iso(i.periodEnd),
    lines: i.lines.map(invoiceLineJson),
    subtotal_cents: i.subtotalCents,
    tax_cents: i.taxCents,
    total_cents: i.totalCents,
    paid_at: iso(i.paidAt),
    created_at: iso(i.createdAt),
    html_url: `/v1/organizations/invoices/${i.id}.html`,
  };
}

export function upcomingJson(u: UpcomingInvoice | null) {
  if (!u) return { type: 'upcoming_invoice' as const, invoice: null };
  return {
    type: 'upcoming_invoice' as const,
    invoice: {
      currency: u.currency,
      period_start: iso(u.periodStart),
      period_end: iso(u.periodEnd),
      lines: u.lines.map(invoiceLineJson),
      subtotal_cents: u.subtotalCents,
      tax_cents: u.taxCents,
      total_cents: u.totalCents,
    },
  };
}
