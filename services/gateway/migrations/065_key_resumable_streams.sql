-- A key whose streaming Messages calls are resumable without the `keygate-resumable` header
-- (issue 20, item 5: opt-in per request or per key). A request can still say
-- `keygate-resumable: false`.
alter table api_keys add column resumable_streams boolean not null default false;
