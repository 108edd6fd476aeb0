-- The daily reconciliation runs once per account and UTC day across every gateway instance on
-- this database: an instance claims (account, day) before it asks the provider, and a failed run
-- gives its claim back so a later tick (on any instance) tries again.
create table reconciliation_claims (
  account_id text not null,
  day date not null,
  claimed_by text not null,
  claimed_at timestamptz not null default now(),
  primary key (account_id, day)
);
