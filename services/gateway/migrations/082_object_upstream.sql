-- Issue 31 item 4, continued: the account upstream (account_upstreams.id) a file was uploaded
-- through, and for every other object Keygate owns the one that made it; null for the account's
-- provider key (and a test key's emulator). A file lives there only, so its retrieve, content,
-- delete and the calls that name it go there, with that upstream's own credential. No foreign key,
-- for the reason 081 gives: a removed upstream must not turn its files into the provider key's.
alter table provider_objects add column if not exists upstream_id text;

-- Batches made since 081 know theirs already.
update provider_objects o set upstream_id = b.upstream_id
  from batches b
  where b.account_id = o.account_id and b.id = o.id and b.upstream_id is not null and o.upstream_id is null;

-- Files uploaded before this migration by an account without a provider key went to its first
-- upstream that serves files (the provider's API or Claude Platform on AWS): where they are read
-- until now, so nothing moves at the upgrade. Those of an account with a provider key went to it.
update provider_objects o set upstream_id = (
    select u.id from account_upstreams u
    where u.account_id = o.account_id and u.kind in ('anthropic', 'aws')
    order by u.position limit 1)
  where o.kind = 'file' and o.upstream_id is null
    and exists (select 1 from accounts a where a.id = o.account_id and a.provider_key_sealed is null);

-- An admin's list of an account with upstreams is read from this table, every member's objects.
create index if not exists provider_objects_account_lists
  on provider_objects (account_id, kind, created_at desc, id desc) where deleted_at is null;
