-- Rollups per endpoint: the messages usage report must not count count_tokens calls or model
-- listings. Rows written before this migration are taken as messages.
alter table usage_hourly add column endpoint text not null default 'messages';
alter table usage_hourly alter column endpoint drop default;
alter table usage_hourly drop constraint usage_hourly_account_id_hour_key_id_member_id_model_group_i_key;
alter table usage_hourly add constraint usage_hourly_rollup_key
  unique nulls not distinct (account_id, endpoint, hour, key_id, member_id, model, group_id);

-- Covered by 002's (account_id, created_at desc, id desc) indexes: their leading account_id
-- serves every lookup by account, and single rows are found by primary key.
drop index audit_log_account_time;
drop index members_account;
drop index api_keys_account;
