-- Plans are data: a new plan is a row, not a code path.
create table plans (
  id text primary key,
  name text not null,
  price_cents integer not null,
  currency text not null default 'EUR',
  per_seat boolean not null,
  max_seats integer,
  trial_days integer not null default 14
);

insert into plans (id, name, price_cents, per_seat, max_seats) values
  ('solo', 'Solo', 900, false, 1),
  ('team', 'Team', 1900, true, null),
  ('scale', 'Scale', 4900, true, null);

create table accounts (
  id text primary key,
  name text not null,
  plan_id text not null references plans(id),
  status text not null default 'active' check (status in ('active', 'suspended')),
  provider_key_sealed text,
  provider_key_hint text,
  trial_ends_at timestamptz,
  created_at timestamptz not null default now()
);

create table members (
  id text primary key,
  account_id text not null references accounts(id),
  email text not null,
  name text not null,
  role text not null default 'developer' check (role in ('admin', 'developer')),
  status text not null default 'active' check (status in ('active', 'removed')),
  created_at timestamptz not null default now(),
  removed_at timestamptz
);
create unique index members_account_email on members (account_id, lower(email)) where status = 'active';
create index members_account on members (account_id, id);

create table api_keys (
  id text primary key,
  account_id text not null references accounts(id),
  member_id text references members(id),
  kind text not null check (kind in ('live', 'test', 'admin')),
  name text not null,
  app text,
  environment text,
  hint text not null,
  status text not null default 'active' check (status in ('active', 'inactive', 'archived')),
  expires_at timestamptz,
  limit_rpm integer,
  limit_tpm integer,
  limit_monthly_spend_cents integer,
  created_by text,
  created_at timestamptz not null default now(),
  last_used_at timestamptz
);
create index api_keys_account on api_keys (account_id, id);

-- A key's secrets: one current, plus the previous one during a rotation's grace period.
create table key_secrets (
  hash bytea primary key,
  key_id text not null references api_keys(id),
  expires_at timestamptz,
  created_at timestamptz not null default now()
);
create index key_secrets_key on key_secrets (key_id);

create table calls (
  id text primary key,
  account_id text not null,
  key_id text,
  member_id text,
  app text,
  environment text,
  group_id text,
  endpoint text not null,
  model text,
  stream boolean not null default false,
  status integer not null,
  error_type text,
  input_tokens integer not null default 0,
  output_tokens integer not null default 0,
  cache_creation_input_tokens integer not null default 0,
  cache_creation_5m_tokens integer not null default 0,
  cache_creation_1h_tokens integer not null default 0,
  cache_read_input_tokens integer not null default 0,
  web_search_requests integer not null default 0,
  service_tier text,
  usage jsonb,
  upstream_message_id text,
  upstream_request_id text,
  retry_count integer not null default 0,
  latency_ms real not null,
  ttfb_ms real,
  partial boolean not null default false,
  created_at timestamptz not null
);
create index calls_account_time on calls (account_id, created_at desc);
create index calls_key_time on calls (key_id, created_at desc);
create index calls_group on calls (account_id, group_id) where group_id is not null;

-- Hourly rollups: reports read these, never a scan of raw calls.
create table usage_hourly (
  account_id text not null,
  hour timestamptz not null,
  key_id text,
  member_id text,
  model text,
  group_id text,
  requests integer not null default 0,
  errors integer not null default 0,
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cache_creation_5m_tokens bigint not null default 0,
  cache_creation_1h_tokens bigint not null default 0,
  cache_read_input_tokens bigint not null default 0,
  web_search_requests bigint not null default 0,
  unique nulls not distinct (account_id, hour, key_id, member_id, model, group_id)
);

create table audit_log (
  id text primary key,
  account_id text not null,
  actor text not null,
  action text not null,
  target_id text,
  details jsonb,
  created_at timestamptz not null default now()
);
create index audit_log_account_time on audit_log (account_id, created_at desc);
