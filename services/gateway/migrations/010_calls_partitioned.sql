-- The call log grows with time: calls becomes a table partitioned by month (UTC) of created_at,
-- so retention drops whole months and a time-bounded read touches only its months. Reports read
-- the hourly rollups, which retention never touches.
--
-- A partitioned table's unique constraints must hold its partition key, so the primary key is
-- (id, created_at). Dedup by call id stays exact: a call's record is written once with its
-- created_at, and every retry or replay of it carries that same created_at, so it meets itself
-- on (id, created_at); ids are random, so two different calls never share one.
alter table calls rename to calls_unpartitioned;
alter table calls_unpartitioned rename constraint calls_pkey to calls_unpartitioned_pkey;
alter index calls_account_time rename to calls_unpartitioned_account_time;
alter index calls_key_time rename to calls_unpartitioned_key_time;
alter index calls_group rename to calls_unpartitioned_group;
alter index calls_trouble rename to calls_unpartitioned_trouble;

create table calls (like calls_unpartitioned including defaults including constraints) partition by range (created_at);
alter table calls add constraint calls_pkey primary key (id, created_at);
create index calls_account_time on calls (account_id, created_at desc);
create index calls_key_time on calls (key_id, created_at desc);
create index calls_group on calls (account_id, group_id) where group_id is not null;
create index calls_trouble on calls (account_id, created_at)
  where status >= 400 or error_type is not null or retry_count > 0;

-- A call in a month that has no partition yet (a clock far off, a spool replayed late) lands
-- here rather than failing; creating that month's partition moves it out.
create table calls_default partition of calls default;

-- The partition of the month holding `at` (UTC), created if missing: rows the default partition
-- holds for that month move into it first, so attaching it never conflicts. Idempotent and
-- serialised across instances.
create function keygate_ensure_calls_partition(at timestamptz) returns text language plpgsql as $$
declare
  lo timestamptz := date_trunc('month', at at time zone 'UTC') at time zone 'UTC';
  hi timestamptz := (date_trunc('month', at at time zone 'UTC') + interval '1 month') at time zone 'UTC';
  part text := 'calls_p' || to_char(at at time zone 'UTC', 'YYYYMM');
begin
  perform pg_advisory_xact_lock(hashtext('keygate_calls_partitions'));
  if exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where c.relname = part and n.nspname = current_schema()) then
    return part;
  end if;
  execute format('create table %I (like calls including defaults including constraints)', part);
  execute format('insert into %I select * from calls_default where created_at >= %L and created_at < %L', part, lo, hi);
  execute format('delete from calls_default where created_at >= %L and created_at < %L', lo, hi);
  execute format('alter table calls attach partition %I for values from (%L) to (%L)', part, lo, hi);
  return part;
end $$;

-- A partition for every month the old table holds, and for this month and the next.
select keygate_ensure_calls_partition(m)
from (select distinct date_trunc('month', created_at at time zone 'UTC') at time zone 'UTC' as m from calls_unpartitioned
      union select now() union select now() + interval '1 month') months;

insert into calls select * from calls_unpartitioned;
drop table calls_unpartitioned;

-- How long an account's raw call rows are kept, per plan (the rollups are kept regardless).
-- Billing's plan catalog may have added this column already; its values then stand.
do $$
begin
  if not exists (select 1 from information_schema.columns
                 where table_schema = current_schema() and table_name = 'plans' and column_name = 'retention_days') then
    alter table plans add column retention_days integer not null default 30;
    update plans set retention_days = case id when 'team' then 90 when 'scale' then 365 else 30 end;
  end if;
end $$;
