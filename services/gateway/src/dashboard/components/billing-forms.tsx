/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { Prose } from './prose';
import type { FC } from 'hono/jsx';
import type { catalogJson, subscriptionView } from '../../billing/view';
import { PostForm } from './controls';

type Subscription = Awaited<ReturnType<typeof subscriptionView>>;
type Plan = ReturnType<typeof catalogJson>;

/** A Stripe subscription that is still running: changes go through the customer portal, not a new Checkout. */
export const paysThroughStripe = (s: Pick<Subscription, 'payment' | 'state'>) =>
  s.payment.provider === 'stripe' && !['canceled', 'incomplete'].includes(s.state);

function verb(plan: Plan, current: Plan | null, subscribing: boolean): string {
  if (!current || plan.id === current.id)
    return subscribing ? `Subscribe to ${plan.name}` : `Stay on ${plan.name}`;
  return plan.price_cents > current.price_cents ? `Upgrade to ${plan.name}` : `Switch to ${plan.name}`;
}

/** Change plan (through Checkout when Stripe is set up), the customer portal, and cancel at period end. */
export const PlanActions: FC<{ csrf: string; subscription: Subscription; plans: Plan[] }> = ({
  csrf,
  subscription: s,
  plans,
}) => {
  const stripe = s.payment.stripe_available;
  const portal = stripe && paysThroughStripe(s);
  // Without Stripe a plan change is recorded at once (the operator records payments); with it, Checkout takes the payment.
  const subscribing = stripe && !portal;
  const fits = (p: Plan) => p.max_seats === null || s.seats.members <= p.max_seats;
  const choices = plans.filter((p) => (subscribing || p.id !== s.plan?.id) && fits(p));
  const tooSmall = plans.filter((p) => !fits(p));
  const cancellable =
    !portal && !s.cancel_at_period_end && ['trialing', 'active', 'past_due'].includes(s.state);
  return (
    <section aria-labelledby="change-title" class="billing-actions">
      <h2 id="change-title">Change plan or pay</h2>
      {portal ? (
        <>
          <p>
            This account pays through Stripe: change the plan or the card, see Stripe's receipts, or cancel in
            the customer portal.
          </p>
          <PostForm action="/dashboard/billing/portal" csrf={csrf} class="inline">
            <button type="submit">Open the customer portal</button>
          </PostForm>
        </>
      ) : (
        <>
          <p>
            {stripe ? (
              `Choosing a plan opens Stripe Checkout for the account's ${s.seats.charged} seat${s.seats.charged === 1 ? '' : 's'}${s.trial.days_left > 0 ? "; the trial's remaining days carry over" : ''}.`
            ) : s.billing === 'off' ? (
              "Billing is off on this gateway: calls are never paused for payment. A plan change sets the account's seat rules, limits and features at once."
            ) : (
              <Prose text="Payments on this gateway are recorded by its operator (no Stripe): a plan change applies at once and shows on the upcoming invoice; the operator extends a trial with `keygate account set-trial`." />
            )}
            {tooSmall.map(
              (p) =>
                ` ${p.name} has ${p.max_seats} seat${p.max_seats === 1 ? '' : 's'} and the account ${s.seats.members} members: remove members to choose it.`,
            )}
          </p>
          <PostForm action="/dashboard/billing/plan" csrf={csrf} class="inline plan-buttons">
            {choices.map((p) => (
              <button type="submit" name="plan" value={p.id}>
                {verb(p, s.plan, subscribing)}
              </button>
            ))}
          </PostForm>
        </>
      )}
      {cancellable && (
        <PostForm action="/dashboard/billing/cancel" csrf={csrf} class="inline">
          <button type="submit" class="danger">
            {s.state === 'trialing' ? 'Cancel the trial now' : 'Cancel at the end of the period'}
          </button>
        </PostForm>
      )}
    </section>
  );
};

interface UntilFormProps {
  csrf: string;
  accounts: { id: string; name: string }[];
  today: string;
}

/** An operator's form that gives an account a date (no Stripe): a payment recorded, or a trial set. */
const UntilForm: FC<
  UntilFormProps & {
    id: string;
    title: string;
    text: string;
    action: string;
    who: string;
    until: string;
    button: string;
  }
> = ({ csrf, accounts, today, id, title, text, action, who, until, button }) => (
  <section aria-labelledby={`${id}-title`} class="form-block">
    <h2 id={`${id}-title`}>{title}</h2>
    <p>
      <Prose text={text} />
    </p>
    <PostForm action={action} csrf={csrf} class="inline">
      {/* Labels apart from their fields: a label's name is then its own text, not the accounts listed. */}
      <span class="field">
        <label for={`${id}-account`}>{who}</label>
        <select id={`${id}-account`} name="account_id" required>
          {accounts.map((a) => (
            <option value={a.id}>
              {a.name} ({a.id})
            </option>
          ))}
        </select>
      </span>
      <span class="field">
        <label for={`${id}-through`}>{until}</label>
        <input id={`${id}-through`} type="date" name="through" min={today} required />
      </span>
      <button type="submit">{button}</button>
    </PostForm>
  </section>
);

/** The operator's form: record that an account has paid through a date (no Stripe). */
export const MarkPaidForm: FC<UntilFormProps> = (props) => (
  <UntilForm
    {...props}
    id="mark-paid"
    title="Record a payment"
    text="For accounts billed outside Stripe: calls are allowed through the date (then the grace period), as `keygate account mark-paid` records it."
    action="/dashboard/billing/mark-paid"
    who="Account"
    until="Paid through (UTC, inclusive)"
    button="Mark paid"
  />
);

/** The operator's form: set or extend an account's free trial (no Stripe), as `keygate account set-trial` does. */
export const SetTrialForm: FC<UntilFormProps> = (props) => (
  <UntilForm
    {...props}
    id="set-trial"
    title="Set or extend a trial"
    text="Calls are allowed through the date; a trial that had ended runs again at once, as `keygate account set-trial` sets it."
    action="/dashboard/billing/set-trial"
    who="Extend the trial of"
    until="Trial runs through (UTC, inclusive)"
    button="Set trial"
  />
);
