-- A Managed Agents session reports its usage as running totals; Keygate records what each total
-- grew by since it last looked, as a call of the session's creator. The totals already recorded
-- are kept here, and advanced only from the figures read (compare and swap), so two observers of
-- one session (two instances, a retrieve and an events call at once) record each token once.
create table session_usage (
  account_id text not null references accounts(id) on delete cascade,
  session_id text not null,
  totals jsonb not null,
  updated_at timestamptz not null default now(),
  primary key (account_id, session_id)
);
