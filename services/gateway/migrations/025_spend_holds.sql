-- Hard spend caps shared by instances without Redis: each counter is one scope's spend in a
-- period (micro-USD, seeded once from the rollups, then kept current by every instance), and
-- a call admitted under a hard cap holds its ceiling until it settles. A hold lapses at
-- expires_at, so a crashed instance's holds do not block a cap for longer than a call can run.
create table spend_counters (
  scope text not null,
  label text not null,
  micro_usd bigint not null,
  period_end timestamptz not null,
  primary key (scope, label)
);

create table spend_holds (
  scope text not null,
  label text not null,
  hold_id text not null,
  micro_usd bigint not null,
  expires_at timestamptz not null,
  primary key (scope, label, hold_id)
);
create index spend_holds_expiry on spend_holds (expires_at);
