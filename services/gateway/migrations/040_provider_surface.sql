-- Claude Code names its subagents on each call (x-claude-code-agent-id, x-claude-code-parent-agent-id):
-- the agent-tree report sums a session's calls per agent. Files, batches and other calls that carry
-- bytes rather than tokens record how many went each way.
alter table calls
  add column agent_id text,
  add column parent_agent_id text,
  add column request_bytes bigint,
  add column response_bytes bigint;
create index calls_agent_tree on calls (account_id, group_id, agent_id) where client = 'claude_code';

-- Objects the provider keeps for an account (files, message batches, skills, agent sessions) and
-- who made them through Keygate: a member sees only their own, an admin the account's.
create table provider_objects (
  account_id text not null references accounts(id) on delete cascade,
  id text not null,
  kind text not null check (kind in ('file', 'batch', 'skill', 'session', 'agent', 'environment')),
  key_id text,
  member_id text,
  group_id text,
  created_at timestamptz not null default now(),
  deleted_at timestamptz,
  primary key (account_id, id)
);
create index provider_objects_owner on provider_objects (account_id, kind, member_id);

-- Message batches Keygate follows to their end, whether or not the client fetches the results:
-- each result becomes a call at the batch price. `next_check_at` and `backoff_ms` survive restarts.
create table batches (
  id text primary key,
  account_id text not null references accounts(id) on delete cascade,
  key_id text,
  member_id text,
  app text,
  environment text,
  group_id text,
  live boolean not null,
  request_count integer not null,
  reserved_cents double precision not null default 0,
  status text not null default 'in_progress' check (status in ('in_progress', 'ended', 'recorded')),
  next_check_at timestamptz not null default now(),
  backoff_ms integer not null default 1000,
  results_recorded integer not null default 0,
  created_at timestamptz not null default now(),
  ended_at timestamptz
);
create index batches_open on batches (next_check_at) where status <> 'recorded';
