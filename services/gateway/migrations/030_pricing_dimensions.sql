-- Cost is derived from tokens × the price in force, so the call record and the rollups keep
-- every usage field that changes the price: speed (fast mode), service tier, inference geo
-- (data residency), the Message Batches flag and the prompt-size band (prompt tiers).
alter table calls add column speed text;
alter table calls add column inference_geo text;
alter table calls add column batch boolean not null default false;

alter table usage_hourly add column speed text;
alter table usage_hourly add column service_tier text;
alter table usage_hourly add column inference_geo text;
alter table usage_hourly add column batch boolean not null default false;
-- The largest prompt-size bound (billing/prices.ts PROMPT_BANDS) a call's prompt exceeded; 0 for none.
alter table usage_hourly add column prompt_band integer not null default 0;
alter table usage_hourly drop constraint usage_hourly_rollup_key;
alter table usage_hourly add constraint usage_hourly_rollup_key
  unique nulls not distinct (account_id, endpoint, hour, key_id, member_id, model, group_id,
                             speed, service_tier, inference_geo, batch, prompt_band);
