-- Issue 31 item 4: the account upstream (account_upstreams.id) that created a message batch; null
-- for the account's provider key. The batch lives there only, so the follower and the batch routes
-- read it there, with that upstream's own credential. No foreign key on purpose: `on delete set
-- null` would make a batch of a removed upstream look like the provider key's, whose host and key
-- the follower would then be sent to, and `cascade` would lose the batch. A batch whose upstream
-- is gone stays open, and is recorded if that row comes back (a restore).
alter table batches add column if not exists upstream_id text;
