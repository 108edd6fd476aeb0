import { newId } from '../lib/ids';
import { writeAudit } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { countActive, PlanTooSmallError } from '../tenancy/member-queries';

export type SubscriptionState =
  | 'trialing'
  | 'active'
  | 'past_due'
  | 'unpaid'
  | 'canceled'
  | 'paused'
  | 'incomplete'
  | 'suspended';

/** An account's subscription, with the account fields billing reads beside it. */
export interface SubscriptionRecord {
  accountId: string;
  state: SubscriptionState;
  resumeState: SubscriptionState | null;
  paidUntil: Date | null;
  pastDueSince: Date | null;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  hasPaymentMethod: boolean;
  stripeCustomerId: string | null;
  stripeSubscriptionId: string | null;
  stripeEventAt: Date | null;
  planId: string;
  trialEndsAt: Date | null;
  accountStatus: 'active' | 'suspended';
}

export type SubscriptionPatch = Partial<
  Pick<
    SubscriptionRecord,
    | 'state'
    | 'resumeState'
    | 'paidUntil'
    | 'pastDueSince'
    | 'currentPeriodStart'
    | 'currentPeriodEnd'
    | 'cancelAtPeriodEnd'
    | 'hasPaymentMethod'
    | 'stripeCustomerId'
    | 'stripeSubscriptionId'
    | 'stripeEventAt'
    | 'planId'
    | 'trialEndsAt'
  >
>;

/** Why a subscription changed: a Stripe event (ref: its id), a person (actor: operator, cli, key_…) or the clock. */
export interface Cause {
  kind: 'webhook' | 'operator' | 'admin' | 'clock';
  actor: string;
  ref: string | null;
  /** False when the caller's own audit entry already tells this change (a suspension's `account.suspend`). */
  audit?: boolean;
}

export interface TransitionRecord {
  id: string;
  fromState: SubscriptionState | null;
  toState: SubscriptionState;
  fromPlan: string | null;
  toPlan: string | null;
  cause: Cause['kind'];
  causeRef: string | null;
  at: Date;
}

const cols = (sql: Sql) => sql`
  a.id as "accountId", coalesce(s.state, case when a.status = 'suspended' then 'suspended' else 'trialing' end) as state,
  s.resume_state as "resumeState", s.paid_until as "paidUntil", s.past_due_since as "pastDueSince",
  s.current_period_start as "currentPeriodStart", s.current_period_end as "currentPeriodEnd",
  coalesce(s.cancel_at_period_end, false) as "cancelAtPeriodEnd", coalesce(s.has_payment_method, false) as "hasPaymentMethod",
  s.stripe_customer_id as "stripeCustomerId", s.stripe_subscription_id as "stripeSubscriptionId", s.stripe_event_at as "stripeEventAt",
  a.plan_id as "planId", a.trial_ends_at as "trialEndsAt", a.status as "accountStatus"`;

/** The change to make, given the current row (locked); null changes nothing. May throw to refuse. */
export type Decide = (
  current: SubscriptionRecord,
  t: Sql,
) => Promise<SubscriptionPatch | null> | SubscriptionPatch | null;

export function subscriptionQueries(sql: Sql) {
  return {
    async get(accountId: string): Promise<SubscriptionRecord | null> {
      const [row] = await sql<
        SubscriptionRecord[]
      >`select ${cols(sql)} from accounts a left join subscriptions s on s.account_id = a.id where a.id = ${accountId}`;
      return row ?? null;
    },

    /** Accounts whose subscription has a row (the others are trialing on their account's trial). */
    async all(): Promise<SubscriptionRecord[]> {
      return sql<
        SubscriptionRecord[]
      >`select ${cols(sql)} from subscriptions s join accounts a on a.id = s.account_id`;
    },

    /** Accounts the clock may have something to do for by `now`: a trial ending (or near its end), a period or grace running out. */
    async due(now: Date, noticeMs: number): Promise<SubscriptionRecord[]> {
      const soon = new Date(now.getTime() + noticeMs);
      return sql<SubscriptionRecord[]>`
        select ${cols(sql)} from accounts a left join subscriptions s on s.account_id = a.id
        where (coalesce(s.state, 'trialing') = 'trialing' and a.trial_ends_at <= ${soon})
           or s.state = 'past_due'
           or (s.state = 'active' and (s.current_period_end <= ${now} or s.paid_until <= ${now}))`;
    },

    async accountForStripe(customerId: string | null, subscriptionId: string | null): Promise<string | null> {
      const [row] = await sql<{ accountId: string }[]>`
        select account_id as "accountId" from subscriptions
        where stripe_subscription_id = ${subscriptionId} or stripe_customer_id = ${customerId} limit 1`;
      return row?.accountId ?? null;
    },

    async eventSeen(id: string): Promise<boolean> {
      return (await sql`select 1 from stripe_events where id = ${id}`).length > 0;
    },

    /** Records a Stripe event as applied even when it changed nothing (so a replay is answered as one). */
    async recordEvent(id: string, type: string, accountId: string | null): Promise<boolean> {
      return (
        (
          await sql`insert into stripe_events (id, type, account_id) values (${id}, ${type}, ${accountId}) on conflict do nothing returning id`
        ).length > 0
      );
    },

    /**
     * Changes a subscription under the account's lock: records the transition (state or plan)
     * with its cause, in the audit log too, and tells every gateway instance, in one
     * transaction. With `eventId`, a Stripe event already applied changes nothing (null).
     */
    async change(
      accountId: string,
      at: Date,
      cause: Cause,
      decide: Decide,
      eventId?: { id: string; type: string },
    ): Promise<{ before: SubscriptionRecord; after: SubscriptionRecord } | null> {
      return inTransaction(sql, async (t) => {
        const [account] = await t`select id from accounts where id = ${accountId} for update`;
        if (!account) return null;
        if (eventId) {
          const fresh =
            await t`insert into stripe_events (id, type, account_id) values (${eventId.id}, ${eventId.type}, ${accountId}) on conflict do nothing returning id`;
          if (fresh.length === 0) return null;
        }
        await t`
          insert into subscriptions (account_id, state)
          select id, case when status = 'suspended' then 'suspended' else 'trialing' end from accounts where id = ${accountId}
          on conflict do nothing`;
        const [before] = await t<
          SubscriptionRecord[]
        >`select ${cols(t)} from accounts a join subscriptions s on s.account_id = a.id where a.id = ${accountId}`;
        const patch = await decide(before!, t);
        if (!patch) return { before: before!, after: before! };
        const after: SubscriptionRecord = { ...before!, ...patch };
        if (after.planId !== before!.planId) await guardPlanSeats(t, accountId, after.planId);
        await t`
          update subscriptions set state = ${after.state}, resume_state = ${after.resumeState}, paid_until = ${after.paidUntil},
            past_due_since = ${after.pastDueSince}, current_period_start = ${after.currentPeriodStart},
            current_period_end = ${after.currentPeriodEnd}, cancel_at_period_end = ${after.cancelAtPeriodEnd},
            has_payment_method = ${after.hasPaymentMethod}, stripe_customer_id = ${after.stripeCustomerId},
            stripe_subscription_id = ${after.stripeSubscriptionId}, stripe_event_at = ${after.stripeEventAt}, updated_at = now()
          where account_id = ${accountId}`;
        const trialMoved = after.trialEndsAt?.getTime() !== before!.trialEndsAt?.getTime();
        if (after.planId !== before!.planId || trialMoved) {
          await t`update accounts set plan_id = ${after.planId}, trial_ends_at = ${after.trialEndsAt} where id = ${accountId}`;
        }
        const moved = after.state !== before!.state || after.planId !== before!.planId;
        if (moved)
          await t`
            insert into subscription_transitions (id, account_id, from_state, to_state, from_plan, to_plan, cause, cause_ref, at)
            values (${newId('subtr')}, ${accountId}, ${before!.state}, ${after.state}, ${before!.planId}, ${after.planId}, ${cause.kind}, ${cause.ref}, ${at})`;
        if (moved || trialMoved) {
          const action =
            after.state !== before!.state
              ? `subscription.${after.state}`
              : after.planId !== before!.planId
                ? 'account.plan_change'
                : 'subscription.trial_change';
          if (cause.audit !== false)
            await writeAudit(t, accountId, {
              actor: cause.actor,
              action,
              targetId: accountId,
              details: {
                from: before!.state,
                to: after.state,
                from_plan: before!.planId,
                to_plan: after.planId,
                cause: cause.kind,
                cause_ref: cause.ref,
                at: at.toISOString(),
                ...(trialMoved ? { trial_ends_at: after.trialEndsAt?.toISOString() ?? null } : {}),
              },
            });
        }
        await invalidate(t, `account:${accountId}`);
        return { before: before!, after };
      });
    },

    async transitions(
      accountId: string,
      from: Date | null = null,
      to: Date | null = null,
    ): Promise<TransitionRecord[]> {
      return sql<TransitionRecord[]>`
        select id, from_state as "fromState", to_state as "toState", from_plan as "fromPlan", to_plan as "toPlan",
               cause, cause_ref as "causeRef", at
        from subscription_transitions
        where account_id = ${accountId} and (${from}::timestamptz is null or at >= ${from}) and (${to}::timestamptz is null or at < ${to})
        order by at, created_at, id`;
    },
  };
}

/** A plan change must leave no more members than the new plan's seats (the account row is locked by the caller). */
async function guardPlanSeats(t: Sql, accountId: string, planId: string): Promise<void> {
  const [plan] = await t<
    { name: string; maxSeats: number | null }[]
  >`select name, max_seats as "maxSeats" from plans where id = ${planId}`;
  const seats = await countActive(t, accountId);
  if (plan?.maxSeats != null && seats > plan.maxSeats)
    throw new PlanTooSmallError(plan.name, plan.maxSeats, seats);
}

export type SubscriptionQueries = ReturnType<typeof subscriptionQueries>;
