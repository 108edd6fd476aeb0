-- Account settings read by the reports and the dashboard:
-- time_zone: the IANA zone day buckets start in (checked by the gateway: whole hours from UTC);
-- members_manage_own_keys: members may create and revoke their own keys from the dashboard.
alter table accounts add column time_zone text not null default 'UTC';
alter table accounts add column members_manage_own_keys boolean not null default false;
