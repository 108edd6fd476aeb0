-- Budgets: a spend limit in USD cents per account, member (user) or key, over a period that
-- resets (UTC days, ISO weeks starting Monday, or months). A hard cap refuses calls once
-- reached; thresholds (percent of the limit) raise an alert once per period each.
create table budgets (
  id text primary key,
  account_id text not null references accounts(id),
  scope text not null check (scope in ('account', 'user', 'api_key')),
  target_id text,
  name text not null,
  limit_cents bigint not null check (limit_cents >= 0),
  hard_cap boolean not null default true,
  thresholds integer[] not null default '{50,80,100}',
  period text not null default 'monthly' check (period in ('daily', 'weekly', 'monthly')),
  created_by text,
  created_at timestamptz not null default now(),
  check ((scope = 'account') = (target_id is null))
);
create index budgets_account_time on budgets (account_id, created_at desc, id desc);

-- The thresholds already announced, per period: the insert that wins sends the alert, so each
-- fires once per period however many instances see the spend cross it.
create table budget_crossings (
  budget_id text not null references budgets(id) on delete cascade,
  period_start timestamptz not null,
  threshold integer not null,
  crossed_at timestamptz not null default now(),
  primary key (budget_id, period_start, threshold)
);

-- A member's spend this period is seeded from its rollups.
create index usage_hourly_member_hour on usage_hourly (member_id, hour) where member_id is not null;

-- Where alerts go. The signing secret is sealed like provider keys: shown once, never listed.
create table webhook_endpoints (
  id text primary key,
  account_id text not null references accounts(id),
  url text not null,
  description text,
  secret_sealed text not null,
  events text[] not null,
  status text not null default 'active' check (status in ('active', 'disabled')),
  -- Error-rate alert of this endpoint: errors / calls over the window, at or above the threshold.
  error_rate_threshold real check (error_rate_threshold > 0 and error_rate_threshold <= 1),
  error_rate_window_seconds integer check (error_rate_window_seconds between 10 and 86400),
  error_rate_min_calls integer not null default 10,
  error_rate_alerting boolean not null default false,
  created_by text,
  created_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index webhook_endpoints_account_time on webhook_endpoints (account_id, created_at desc, id desc);

-- The outbox: anything that raises an alert inserts a row here (in its own transaction, so an
-- alert exists exactly when its cause committed); the trigger below fans it out to the
-- account's endpoints subscribed to its type. `endpoint_id` addresses one endpoint only;
-- `dedup_key` makes a repeated insert of the same alert a no-op.
create table alert_events (
  id text primary key,
  account_id text not null references accounts(id),
  type text not null,
  data jsonb not null,
  endpoint_id text references webhook_endpoints(id),
  dedup_key text unique,
  created_at timestamptz not null default clock_timestamp()
);
create index alert_events_account_time on alert_events (account_id, created_at desc, id desc);

-- One row per (event, endpoint); `seq` is the order of delivery within an endpoint.
create table webhook_deliveries (
  seq bigserial primary key,
  event_id text not null references alert_events(id),
  endpoint_id text not null references webhook_endpoints(id),
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_status integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default clock_timestamp(),
  unique (event_id, endpoint_id)
);
create index webhook_deliveries_pending on webhook_deliveries (endpoint_id, seq) where status = 'pending';
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, seq desc);

create function alert_events_fan_out() returns trigger language plpgsql as $$
begin
  insert into webhook_deliveries (event_id, endpoint_id)
  select new.id, e.id from webhook_endpoints e
  where e.account_id = new.account_id and e.deleted_at is null and e.status = 'active'
    and new.type = any(e.events) and (new.endpoint_id is null or e.id = new.endpoint_id)
  order by e.created_at, e.id;
  perform pg_notify('keygate_alerts', new.account_id);
  return null;
end $$;

create trigger alert_events_fan_out after insert on alert_events
  for each row execute function alert_events_fan_out();
