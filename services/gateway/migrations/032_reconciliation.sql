-- Reconciliation against the provider: an account may give its provider Admin API key (sealed
-- like the provider key), and each run's comparison is kept for the dashboard and the API.
alter table accounts add column provider_admin_key_sealed text;
alter table accounts add column provider_admin_key_hint text;

create table reconciliations (
  id text primary key,
  account_id text not null,
  starting_at timestamptz not null,
  ending_at timestamptz not null,
  ran_at timestamptz not null default now(),
  drift_percent double precision not null,
  result jsonb not null
);
create index reconciliations_account on reconciliations (account_id, ran_at desc);
