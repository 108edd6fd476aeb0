-- Keys are deleted softly: their usage history stays attributed to their id.
alter table api_keys add column deleted_at timestamptz;
alter table accounts add column suspended_at timestamptz;

-- Listings page newest first over (created_at, id).
create index accounts_time on accounts (created_at desc, id desc);
create index members_account_time on members (account_id, created_at desc, id desc);
create index api_keys_account_time on api_keys (account_id, created_at desc, id desc);
create index audit_log_account_time_id on audit_log (account_id, created_at desc, id desc);

-- A key's month-to-date spend is seeded from its rollups (spend caps).
create index usage_hourly_key_hour on usage_hourly (key_id, hour);
create index usage_hourly_hour on usage_hourly (hour);

-- The durable twin of NOTIFY keygate_invalidate: gateways poll it where LISTEN cannot work
-- (the embedded database, poolers in transaction mode) and after a LISTEN reconnect.
create table invalidations (
  id bigserial primary key,
  payload text not null,
  created_at timestamptz not null default clock_timestamp()
);
create index invalidations_time on invalidations (created_at);
