-- Rate limits in the provider's shape: requests, input tokens and output tokens per minute, each its
-- own token bucket (https://docs.claude.com/en/api/rate-limits, read 2026-11-29). Input tokens count
-- as the provider counts them (uncached input and cache writes; cache reads are free), so a Claude
-- Code call that reads 90% of its prompt from the cache uses a tenth of what its body's bytes suggest.
alter table api_keys add column if not exists limit_itpm integer;
alter table api_keys add column if not exists limit_otpm integer;
alter table plans add column if not exists default_limit_itpm integer;
alter table plans add column if not exists default_limit_otpm integer;

-- Keys that still carry their plan's old defaults (copied at creation) take the new ones; a key with
-- limits of its own keeps them (a tokens-per-minute limit stays, counted the provider's way now).
update api_keys k
   set limit_rpm = case p.id when 'solo' then 1000 when 'team' then 2000 when 'scale' then 4000 else k.limit_rpm end,
       limit_tpm = case when p.id in ('solo', 'team', 'scale') then null else k.limit_tpm end,
       limit_itpm = case p.id when 'solo' then 1000000 when 'team' then 2000000 when 'scale' then 4000000 end,
       limit_otpm = case p.id when 'solo' then 200000 when 'team' then 400000 when 'scale' then 800000 end
  from accounts a join plans p on p.id = a.plan_id
 where k.account_id = a.id and k.kind <> 'admin'
   and p.id in ('solo', 'team', 'scale')
   and k.limit_rpm is not distinct from p.default_limit_rpm
   and k.limit_tpm is not distinct from p.default_limit_tpm
   and (k.limit_rpm is not null or k.limit_tpm is not null);

-- Sized for a member running Claude Code with five parallel subagents of 600 KB prompts (about
-- 170,000 tokens each when nothing is cached yet) and 128,000 max_tokens: never refused by a default.
update plans set default_limit_rpm = 1000, default_limit_tpm = null, default_limit_itpm = 1000000, default_limit_otpm = 200000
 where id = 'solo';
update plans set default_limit_rpm = 2000, default_limit_tpm = null, default_limit_itpm = 2000000, default_limit_otpm = 400000
 where id = 'team';
update plans set default_limit_rpm = 4000, default_limit_tpm = null, default_limit_itpm = 4000000, default_limit_otpm = 800000
 where id = 'scale';

-- Issue 29: keys made for a service account, member tokens and identity providers' sign-in keys
-- were made without the plan's defaults. Those that still have no limit of any kind take them now
-- (every key made from here on gets them when its maker says nothing: store/keys.ts insertKey).
update api_keys k
   set limit_rpm = p.default_limit_rpm, limit_tpm = p.default_limit_tpm, limit_itpm = p.default_limit_itpm,
       limit_otpm = p.default_limit_otpm, limit_monthly_spend_cents = p.default_monthly_spend_cap_cents
  from accounts a join plans p on p.id = a.plan_id
 where k.account_id = a.id and k.kind <> 'admin'
   and k.limit_rpm is null and k.limit_tpm is null and k.limit_monthly_spend_cents is null
   and (k.service_account_id is not null or k.created_by = 'idp'
        or exists (select 1 from idp_sessions s where s.key_id = k.id));

-- What a call holds on a hard-capped budget or spend limit while it runs: what it is expected to cost
-- (`expected`), or the most it can cost (`ceiling`: every input byte a token at the dearest rate, and
-- all of max_tokens).
alter table budgets add column hold text not null default 'expected' check (hold in ('expected', 'ceiling'));
alter table spend_limits add column hold text not null default 'expected' check (hold in ('expected', 'ceiling'));

-- Why the gateway refused a call (null when it did not): the rule, so the call log and the
-- overview tell a spend limit from a rate limit. `rate_limit:<requests|input_tokens|…>`,
-- `spend_limit:<id>`, `budget:<id>`, `key_spend_cap`, `billing`, `model_policy`.
alter table calls add column refusal text;
