-- A member's list of files, batches, skills, sessions, agents or environments is read from
-- Keygate's own table of who made what, newest first, a page at a time (after_id / before_id).
create index provider_objects_lists on provider_objects (account_id, kind, member_id, key_id, created_at desc, id desc)
  where deleted_at is null;
