-- A dashboard session is tied to the exact credential that opened it: the key secret's hash
-- (a rotation ends it, with no grace) or a digest of the operator token (a new token ends it).
alter table dashboard_sessions add column secret_hash bytea, add column operator_tag bytea;
-- Sessions from before cannot be tied to their credential: they end, and their users sign in again.
delete from dashboard_sessions;
