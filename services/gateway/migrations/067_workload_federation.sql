-- Workload identity federation: issuers an account trusts, rules from a verified assertion to a
-- service account, and the short-lived tokens (keys that expire) minted through a rule.
create table federation_issuers (
  id text primary key,
  account_id text not null references accounts(id),
  name text not null,
  issuer_url text not null,
  jwks jsonb not null,
  check_jti boolean not null default true,
  max_jwt_lifetime_seconds integer not null default 3600,
  created_by text,
  updated_by text,
  archived_by text,
  archived_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index federation_issuers_name on federation_issuers (account_id, name);
create index federation_issuers_account_time on federation_issuers (account_id, created_at desc, id desc);

create table federation_rules (
  id text primary key,
  account_id text not null references accounts(id),
  issuer_id text not null references federation_issuers(id),
  service_account_id text not null references service_accounts(id),
  name text not null,
  description text,
  match jsonb not null,
  token_lifetime_seconds integer not null default 3600,
  enabled boolean not null default true,
  created_by text,
  updated_by text,
  archived_by text,
  archived_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index federation_rules_name on federation_rules (account_id, name);
create index federation_rules_account_time on federation_rules (account_id, created_at desc, id desc);

-- A minted token is a key of the service account; it names the rule that minted it, so ending
-- the rule (or its issuer) ends its tokens.
alter table api_keys add column if not exists federation_rule_id text references federation_rules(id);
create index api_keys_federation_rule on api_keys (federation_rule_id) where federation_rule_id is not null;

-- Assertion ids seen, kept until the assertion expires (replay protection).
create table federation_jti (
  issuer_id text not null references federation_issuers(id),
  jti text not null,
  expires_at timestamptz not null,
  primary key (issuer_id, jti)
);
create index federation_jti_expires on federation_jti (expires_at);

-- A service account may carry a model policy: its keys and its workload tokens are under it.
alter table model_policies drop constraint if exists model_policies_subject_type_check;
alter table model_policies add constraint model_policies_subject_type_check
  check (subject_type in ('organization', 'rbac_group', 'user', 'service_account', 'api_key'));
