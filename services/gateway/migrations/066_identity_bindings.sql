-- Issue 29: a member is a person at the identity provider by (issuer, subject), never by email alone.
-- The issuer a member's subject was given by (set together with idp_subject at a sign-in).
alter table members add column if not exists idp_issuer text;
-- SCIM's externalId, kept apart from the OIDC subject (a provider's SCIM id need not be its `sub`).
alter table members add column if not exists scim_external_id text;
-- Created by the provider's SCIM client: its first sign-in may bind it by a verified email.
alter table members add column if not exists scim_managed boolean not null default false;
-- Who removed a member: 'admin' (stays removed; SCIM cannot bring it back) or 'identity'.
alter table members add column if not exists removed_by text;
-- Whether a first sign-in may take over an existing, unbound member with the same verified email.
alter table identity_providers add column if not exists link_existing_members boolean not null default false;

update members set scim_external_id = idp_subject where idp_subject is not null;
update members m set scim_managed = true
where exists (
  select 1 from audit_log a
  where a.account_id = m.account_id and a.actor = 'scim' and a.action = 'member.provisioned'
    and lower(a.details->>'email') = lower(m.email));
-- A subject stands as a binding only where the person signed in with it (a key the sign-in made);
-- otherwise it was a SCIM externalId.
update members m set idp_issuer = p.issuer
from identity_providers p
where p.account_id = m.account_id and m.idp_subject is not null
  and exists (select 1 from api_keys k where k.member_id = m.id and k.created_by = 'idp');
update members set idp_subject = null where idp_issuer is null;
update members m set removed_by = 'admin'
where m.status = 'removed'
  and exists (select 1 from audit_log a where a.account_id = m.account_id and a.action = 'user.remove' and a.target_id = m.id);
update members set removed_by = 'identity' where status = 'removed' and removed_by is null;
create index if not exists members_idp_binding on members (account_id, idp_issuer, idp_subject) where idp_subject is not null;

-- Keygate's refresh tokens rotate on every use (RFC 9700 §4.14): the spent ones are kept (hash
-- only) so that a replay of one ends its whole session.
create table idp_refresh_spent (
  hash bytea primary key,
  session_id text not null references idp_sessions(id),
  spent_at timestamptz not null default now()
);
create index idp_refresh_spent_session on idp_refresh_spent (session_id, spent_at);
