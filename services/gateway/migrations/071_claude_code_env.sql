-- Issue 31: environment an account admin pushes to Claude Code through the gateway's managed
-- settings (GET /claude/{account}/managed/settings), one row per account that set any.
create table if not exists claude_code_env (
  account_id text primary key references accounts(id) on delete cascade,
  env jsonb not null,
  updated_at timestamptz not null default now()
);
