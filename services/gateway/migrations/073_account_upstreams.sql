-- Issue 31 item 4: an account's upstreams after its provider key, tried in `position` order when
-- the one before fails before its first byte (upstreams/). The credential is sealed like the
-- provider key (purpose 'upstream-credential', bound to the row id).
create table if not exists account_upstreams (
  id text primary key,
  account_id text not null references accounts(id) on delete cascade,
  position integer not null,
  kind text not null check (kind in ('anthropic', 'aws', 'bedrock', 'google', 'foundry')),
  base_url text not null,
  auth text not null check (auth in ('x-api-key', 'bearer', 'sigv4')),
  credential_sealed text not null,
  credential_hint text not null,
  workspace_id text,
  region text,
  model_map jsonb not null default '{}',
  refused_betas text[] not null default '{}',
  refused_fields text[] not null default '{}',
  created_at timestamptz not null default now(),
  unique (account_id, position) deferrable initially deferred
);

-- The upstream that served a call: null for the account's provider key when it is the only one.
alter table calls add column if not exists upstream text;
