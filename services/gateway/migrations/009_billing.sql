-- The plan catalog grows what a plan includes; the operator edits these rows (API or CLI), no code.
alter table plans add column min_seats integer not null default 1;
alter table plans add column default_limit_rpm integer;
alter table plans add column default_limit_tpm integer;
alter table plans add column default_monthly_spend_cap_cents integer;
alter table plans add column retention_days integer not null default 30;
alter table plans add column features jsonb not null default '[]';
alter table plans add column stripe_price_id text;

update plans set min_seats = 1, max_seats = 1, default_limit_rpm = 60, default_limit_tpm = 100000, retention_days = 30,
  features = '["one seat", "app keys", "usage reports"]' where id = 'solo';
update plans set default_limit_rpm = 120, default_limit_tpm = 200000, retention_days = 30,
  features = '["a seat per member", "keys per seat", "combined account view", "usage reports"]' where id = 'team';
update plans set default_limit_rpm = 600, default_limit_tpm = 1000000, default_monthly_spend_cap_cents = 50000, retention_days = 365,
  features = '["a seat per member", "keys per seat", "combined account view", "usage reports", "higher default limits", "365-day call log", "spend budgets", "alerts"]'
  where id = 'scale';

-- One subscription per account; the plan stays on accounts.plan_id and the trial on accounts.trial_ends_at.
-- `suspended` is the operator's suspension (accounts.status), recorded here so transitions tell the whole story.
create table subscriptions (
  account_id text primary key references accounts(id),
  state text not null check (state in ('trialing', 'active', 'past_due', 'unpaid', 'canceled', 'paused', 'incomplete', 'suspended')),
  resume_state text,
  paid_until timestamptz,
  past_due_since timestamptz,
  current_period_start timestamptz,
  current_period_end timestamptz,
  cancel_at_period_end boolean not null default false,
  has_payment_method boolean not null default false,
  stripe_customer_id text unique,
  stripe_subscription_id text unique,
  -- The `created` time of the last Stripe event applied: an older one is out of order.
  stripe_event_at timestamptz,
  updated_at timestamptz not null default now()
);

create table subscription_transitions (
  id text primary key,
  account_id text not null references accounts(id),
  from_state text,
  to_state text not null,
  from_plan text,
  to_plan text,
  -- webhook (ref: Stripe event id), operator / cli / key_… (ref: actor), clock (ref: what came due)
  cause text not null,
  cause_ref text,
  -- When it took effect by the gateway's clock (proration reads plan changes by this time).
  at timestamptz not null,
  created_at timestamptz not null default clock_timestamp()
);
create index subscription_transitions_account on subscription_transitions (account_id, at, id);

-- Stripe events already applied: a replay or duplicate delivery is answered without acting twice.
create table stripe_events (
  id text primary key,
  type text not null,
  account_id text,
  received_at timestamptz not null default now()
);

-- Notices for the account (dashboard banner) and an outbox for the alert webhooks (delivered_at).
create table billing_notices (
  id text primary key,
  account_id text not null references accounts(id),
  kind text not null,
  due_at timestamptz not null,
  message text not null,
  created_at timestamptz not null default now(),
  delivered_at timestamptz,
  unique (account_id, kind, due_at)
);

create table invoices (
  id text primary key,
  account_id text not null references accounts(id),
  number text not null unique,
  period_start timestamptz not null,
  period_end timestamptz not null,
  currency text not null default 'EUR',
  subtotal_cents integer not null,
  -- Tax is not computed yet: kept at 0, with its place on the invoice.
  tax_cents integer not null default 0,
  total_cents integer not null,
  status text not null check (status in ('open', 'paid', 'void')),
  paid_at timestamptz,
  stripe_invoice_id text,
  created_at timestamptz not null default now(),
  unique (account_id, period_start)
);
create index invoices_account on invoices (account_id, created_at desc, id desc);

create table invoice_lines (
  invoice_id text not null references invoices(id),
  position integer not null,
  description text not null,
  quantity integer not null,
  unit_amount_cents integer not null,
  days integer,
  period_days integer,
  amount_cents integer not null,
  primary key (invoice_id, position)
);
