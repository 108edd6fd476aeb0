-- Sign-in through an account's own OIDC identity provider (issue 19, items 1 and 2).
-- The groups claim as the provider last said it; another change adds the same column the same way.
alter table members add column if not exists idp_groups text[] not null default '{}';
-- The provider's subject for a member it provisioned (email may change there; sub does not).
alter table members add column if not exists idp_subject text;

create table identity_providers (
  account_id text primary key references accounts(id),
  name text not null,
  issuer text not null,
  client_id text not null,
  client_secret_sealed text not null,
  allowed_domains text[] not null default '{}',
  groups_claim text not null default 'groups',
  provision text not null check (provision in ('domain', 'group')),
  provision_groups text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- One signed-in device (the `keygate token` helper): Keygate's refresh token (hash only) stands
-- for the provider's refresh token (sealed); the member token is an api_keys row that expires.
create table idp_sessions (
  id text primary key,
  account_id text not null references accounts(id),
  member_id text not null references members(id),
  key_id text not null references api_keys(id),
  refresh_hash bytea not null unique,
  provider_refresh_sealed text,
  subject text not null,
  created_at timestamptz not null default now(),
  refreshed_at timestamptz not null default now(),
  ended_at timestamptz
);
create index idp_sessions_member on idp_sessions (member_id) where ended_at is null;

-- SCIM 2.0 bearer tokens (hash only), created by an account admin.
create table scim_tokens (
  id text primary key,
  account_id text not null references accounts(id),
  hash bytea not null unique,
  hint text not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

create table scim_groups (
  id text primary key,
  account_id text not null references accounts(id),
  display_name text not null,
  external_id text,
  created_at timestamptz not null default now()
);
create unique index scim_groups_name on scim_groups (account_id, lower(display_name));
create table scim_group_members (
  group_id text not null references scim_groups(id) on delete cascade,
  member_id text not null references members(id),
  primary key (group_id, member_id)
);
