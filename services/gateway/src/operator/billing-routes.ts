import { Hono } from 'hono';
import { z } from 'zod';
import { timestamp } from '../reports/query';
import type { AdminEnv } from '../accounts/scope';
import { runBillingClock } from '../billing/clock';
import { markPaid, setTrial, type BillingDeps } from '../billing/lifecycle';
import { catalogJson, subscriptionView } from '../billing/view';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import type { CatalogPlan } from '../billing/catalog-queries';

const count = z.number().int().min(0).max(1_000_000_000);
const limit = z.number().int().min(1).max(100_000_000).nullable();

const PlanChange = z.strictObject({
  name: z.string().trim().min(1).max(100).optional(),
  price_cents: count.optional(),
  per_seat: z.boolean().optional(),
  min_seats: z.number().int().min(1).max(100_000).optional(),
  max_seats: z.number().int().min(1).max(100_000).nullable().optional(),
  trial_days: z.number().int().min(0).max(365).optional(),
  default_limits: z
    .strictObject({
      requests_per_minute: limit.optional(),
      tokens_per_minute: limit.optional(),
      input_tokens_per_minute: limit.optional(),
      output_tokens_per_minute: limit.optional(),
      monthly_spend_cap_cents: count.nullable().optional(),
    })
    .optional(),
  retention_days: z.number().int().min(1).max(3650).optional(),
  features: z.array(z.string().trim().min(1).max(200)).max(50).optional(),
  /** `private`: only the accounts in `offered_to` see it and may move to it themselves. */
  visibility: z.enum(['public', 'private']).optional(),
  offered_to: z
    .array(z.string().regex(/^acct_[A-Za-z0-9]{1,64}$/, "must be account ids ('acct_…')"))
    .max(10_000)
    .optional(),
  stripe_price_id: z
    .string()
    .regex(/^price_[A-Za-z0-9_]+$/, "must be a Stripe price id ('price_…')")
    .nullable()
    .optional(),
});

const Until = z.strictObject({ until: timestamp });

const PLAN_ID = /^[a-z][a-z0-9_-]{0,31}$/;

/** The plan catalog, payments recorded by hand (no Stripe), and the billing clock, for the operator. */
export function operatorBillingRoutes(
  deps: BillingDeps,
  actorOf: (c: { req: { header(name: string): string | undefined } }) => string,
): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Operator';

  app.get(
    '/plans',
    operation({ tag, summary: 'The plan catalog: prices, seat rules, default limits, retention' }),
    async (c) => c.json({ data: (await deps.store.catalog.list()).map(operatorPlanJson), has_more: false }),
  );

  /** Changes a plan's fields (or creates the plan); accounts on it see new prices from their next change or period. */
  const update = operation({
    tag,
    summary: "Change a plan's fields, or create the plan (201)",
    body: PlanChange,
  });
  app.post('/plans/:plan_id', update, async (c) => {
    const id = c.req.param('plan_id');
    if (!PLAN_ID.test(id))
      throw new GatewayError(
        'invalid_request_error',
        'plan id: lower-case letters, digits, - and _ (at most 32).',
      );
    const b = c.req.valid('json');
    const before = await deps.store.catalog.get(id);
    if (!before && (b.name === undefined || b.price_cents === undefined || b.per_seat === undefined)) {
      throw new GatewayError(
        'invalid_request_error',
        `No plan '${id}' yet: a new plan needs name, price_cents and per_seat.`,
      );
    }
    const merged: Omit<CatalogPlan, 'id' | 'currency'> = {
      name: b.name ?? before!.name,
      priceCents: b.price_cents ?? before!.priceCents,
      perSeat: b.per_seat ?? before!.perSeat,
      minSeats: b.min_seats ?? before?.minSeats ?? 1,
      maxSeats: b.max_seats !== undefined ? b.max_seats : (before?.maxSeats ?? null),
      trialDays: b.trial_days ?? before?.trialDays ?? 14,
      defaultLimitRpm: pick(b.default_limits?.requests_per_minute, before?.defaultLimitRpm),
      defaultLimitTpm: pick(b.default_limits?.tokens_per_minute, before?.defaultLimitTpm),
      defaultLimitItpm: pick(b.default_limits?.input_tokens_per_minute, before?.defaultLimitItpm),
      defaultLimitOtpm: pick(b.default_limits?.output_tokens_per_minute, before?.defaultLimitOtpm),
      defaultMonthlySpendCapCents: pick(
        b.default_limits?.monthly_spend_cap_cents,
        before?.defaultMonthlySpendCapCents,
      ),
      retentionDays: b.retention_days ?? before?.retentionDays ?? 30,
      features: b.features ?? before?.features ?? [],
      stripePriceId: pick(b.stripe_price_id, before?.stripePriceId),
      visibility: b.visibility ?? before?.visibility ?? 'public',
      offeredTo: b.offered_to ?? before?.offeredTo ?? [],
    };
    if (!merged.perSeat && merged.maxSeats !== 1)
      throw new GatewayError(
        'invalid_request_error',
        'max_seats: a plan that is not per seat has exactly one seat (max_seats 1).',
      );
    if (merged.maxSeats !== null && merged.maxSeats < merged.minSeats)
      throw new GatewayError('invalid_request_error', 'max_seats: must be at least min_seats.');
    return c.json(operatorPlanJson(await deps.store.catalog.upsert(id, merged)), before ? 200 : 201);
  });

  /** Self-hosting without Stripe: the account has paid until a date; calls are allowed until then (plus the grace period). */
  const markPaidOp = operation({
    tag,
    summary: 'Record a payment made outside Stripe: calls are allowed until the date (plus the grace period)',
    body: Until,
  });
  app.post('/accounts/:account_id/mark_paid', markPaidOp, async (c) => {
    const body = c.req.valid('json');
    const id = c.req.param('account_id');
    await markPaid(deps, id, body.until, actorOf(c));
    return c.json(await subscriptionView(deps, id));
  });

  /** Self-hosting without Stripe: the trial ends at a date (later or earlier); an ended trial runs again. */
  const setTrialOp = operation({
    tag,
    summary: 'Set or extend the free trial: calls are allowed until the date (an ended trial runs again)',
    body: Until,
  });
  app.post('/accounts/:account_id/set_trial', setTrialOp, async (c) => {
    const id = c.req.param('account_id');
    await setTrial(deps, id, c.req.valid('json').until, actorOf(c));
    return c.json(await subscriptionView(deps, id));
  });

  /** Runs the billing clock now (every instance also runs it on a timer). */
  app.post(
    '/billing/clock',
    operation({
      tag,
      summary:
        'Run the billing clock now: trial notices and ends, grace periods, cancellations, invoices of finished periods',
    }),
    async (c) => c.json({ type: 'billing_clock', ...(await runBillingClock(deps)) }),
  );

  return app;
}

function pick<T>(given: T | undefined, before: T | null | undefined): T | null {
  return given !== undefined ? given : (before ?? null);
}

/** The operator also sees which accounts a private plan is offered to. */
const operatorPlanJson = (p: CatalogPlan) => ({ ...catalogJson(p), offered_to: p.offeredTo });
