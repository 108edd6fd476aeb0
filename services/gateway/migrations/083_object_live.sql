-- Whether an object was made with a live key (the provider, or an account upstream) or a test
-- key (Keygate's emulator). A member's list reads only the objects of the kind of key asking:
-- listed with a test key, a live file was looked up in the emulator, not found there, and
-- forgotten (its row marked deleted), so it left the member's live list too.
alter table provider_objects add column if not exists live boolean not null default true;

-- Objects made before this migration: their key says which.
update provider_objects o set live = false
  from api_keys k
  where k.id = o.key_id and k.kind = 'test' and o.live;
