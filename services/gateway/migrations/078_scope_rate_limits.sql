-- Rate limits of a member, an RBAC group or the whole account (issue 30), beside each key's own
-- (api_keys.limit_*): requests, input tokens (cache reads not counted) and output tokens per minute,
-- each its own token bucket (https://docs.claude.com/en/api/rate-limits, read 2026-11-29). A call
-- is admitted only if every limit that applies to it has room. One row per scope; a null column
-- is no limit of that kind.
create table scope_rate_limits (
  id text primary key,
  account_id text not null references accounts(id),
  scope_type text not null check (scope_type in ('organization', 'rbac_group', 'user')),
  -- The account's id for `organization`, else the group's or the member's.
  scope_id text not null,
  limit_rpm integer check (limit_rpm > 0),
  limit_itpm integer check (limit_itpm > 0),
  limit_otpm integer check (limit_otpm > 0),
  created_by text not null,
  updated_by text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (account_id, scope_id)
);

-- What each member gets when nobody set a limit for them: sized, like the keys' defaults (070),
-- for a member running Claude Code with five parallel subagents of 600 KB prompts (about 171,000
-- tokens each with nothing cached yet) and 128,000 max_tokens, on one key or several.
alter table plans add column default_member_limit_rpm integer;
alter table plans add column default_member_limit_itpm integer;
alter table plans add column default_member_limit_otpm integer;
update plans set default_member_limit_rpm = 1000, default_member_limit_itpm = 1000000, default_member_limit_otpm = 200000
 where id = 'solo';
update plans set default_member_limit_rpm = 2000, default_member_limit_itpm = 2000000, default_member_limit_otpm = 400000
 where id = 'team';
update plans set default_member_limit_rpm = 4000, default_member_limit_itpm = 4000000, default_member_limit_otpm = 800000
 where id = 'scale';
