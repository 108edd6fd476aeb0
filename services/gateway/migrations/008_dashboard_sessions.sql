-- Dashboard sign-ins: the cookie carries a random token, the table only its SHA-256.
create table dashboard_sessions (
  token_hash bytea primary key,
  kind text not null check (kind in ('admin', 'member', 'operator')),
  account_id text references accounts(id),
  member_id text,
  key_id text,
  csrf_token text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index dashboard_sessions_expiry on dashboard_sessions (expires_at);

-- The overview's error and retry rates read only the calls that failed or were retried:
-- few, whatever the size of the call log.
create index calls_trouble on calls (account_id, created_at)
  where status >= 400 or error_type is not null or retry_count > 0;
