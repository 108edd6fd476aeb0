-- Issue 19 items 3 and 4: the organization API in the provider's shapes (RBAC groups, invites,
-- service accounts), model policy, and spend limits as a second face of budgets.

-- The identity provider's groups claim, as the OIDC sign-in stores it (the same column there).
alter table members add column if not exists idp_groups text[] not null default '{}';

-- Groups of members: set by admins (rbac_group_members), or named after an identity-provider
-- group (idp_group): members whose idp_groups hold it belong too.
create table rbac_groups (
  id text primary key,
  account_id text not null references accounts(id),
  name text not null,
  idp_group text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index rbac_groups_account_time on rbac_groups (account_id, created_at desc, id desc) where deleted_at is null;

create table rbac_group_members (
  group_id text not null references rbac_groups(id) on delete cascade,
  member_id text not null references members(id),
  created_at timestamptz not null default now(),
  primary key (group_id, member_id)
);
create index rbac_group_members_member on rbac_group_members (member_id);

-- An invitation by email: the person becomes a member when they sign in with that address.
create table invites (
  id text primary key,
  account_id text not null references accounts(id),
  email text not null,
  role text not null,
  rbac_group_ids text[] not null default '{}',
  status text not null default 'pending' check (status in ('pending', 'accepted', 'deleted')),
  expires_at timestamptz not null,
  accepted_at timestamptz,
  member_id text references members(id),
  created_by text,
  created_at timestamptz not null default now()
);
create unique index invites_pending_email on invites (account_id, lower(email)) where status = 'pending';
create index invites_account_time on invites (account_id, created_at desc, id desc);

-- The identity of an app or a CI job: it owns keys, as a member owns theirs.
create table service_accounts (
  id text primary key,
  account_id text not null references accounts(id),
  name text not null,
  description text,
  organization_role text not null default 'developer' check (organization_role in ('admin', 'developer')),
  created_by text,
  updated_by text,
  archived_by text,
  archived_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index service_accounts_name on service_accounts (account_id, name);
create index service_accounts_account_time on service_accounts (account_id, created_at desc, id desc);
alter table api_keys add column if not exists service_account_id text references service_accounts(id);

-- Model policy of the account, a group, a member or a key: an allow-list (exact ids and
-- `family-*` patterns; null allows any model) and a max_tokens ceiling (null: none).
create table model_policies (
  account_id text not null references accounts(id),
  subject_type text not null check (subject_type in ('organization', 'rbac_group', 'user', 'api_key')),
  -- The account's own id for `organization`.
  subject_id text not null,
  allowed_models text[],
  max_tokens integer check (max_tokens > 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (account_id, subject_id)
);

-- Spend limits in the provider's shape, enforced by the budgets engine: one per scope and
-- period (an upsert replaces it). amount_cents null is an explicit no-limit override.
create table spend_limits (
  id text primary key,
  account_id text not null references accounts(id),
  scope_type text not null check (scope_type in ('organization', 'rbac_group', 'user')),
  scope_id text not null,
  period text not null check (period in ('daily', 'weekly', 'monthly')),
  amount_cents bigint check (amount_cents >= 0),
  created_by text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index spend_limits_scope on spend_limits (account_id, scope_id, period);

create table spend_limit_increase_requests (
  id text primary key,
  account_id text not null references accounts(id),
  member_id text not null references members(id),
  period text not null check (period in ('daily', 'weekly', 'monthly')),
  requested_cents bigint check (requested_cents >= 0),
  reason text,
  status text not null default 'pending' check (status in ('pending', 'approved', 'denied')),
  spend_limit_id text,
  resolved_by text,
  resolved_at timestamptz,
  created_at timestamptz not null default now()
);
create index spend_limit_increase_requests_account_time
  on spend_limit_increase_requests (account_id, created_at desc, id desc);
