-- `requests` in the rollups becomes every call (it was calls below status 400), and `errors`
-- stays the calls among them that ended in an error, so errors <= requests and an error rate
-- is errors / requests.
--
-- Every rollup row was written in the same transaction as its calls, and calls are never
-- deleted, so a row whose calls still add up to its old figures is recomputed from them
-- exactly. A row whose calls do not (rows from before 003, which took every endpoint as
-- `messages`, or calls removed by hand) is corrected arithmetically: the old requests plus
-- the old errors counts each refused call once; a call that failed after a 200 was in both
-- old columns and counts twice, so such a row may overstate requests, never understate them.
create temporary table counts_from_calls on commit drop as
select c.account_id, c.endpoint,
       to_timestamp(floor(extract(epoch from c.created_at) / 3600) * 3600) as hour,
       c.key_id, c.member_id, c.model, c.group_id,
       count(*) filter (where c.status < 400) as old_requests,
       count(*) filter (where c.status >= 400 or c.error_type is not null) as errors,
       count(*) as requests
from calls c
group by 1, 2, 3, 4, 5, 6, 7;

create index on counts_from_calls (account_id, endpoint, hour);

update usage_hourly u
set requests = coalesce(
  (select c.requests from counts_from_calls c
   where (c.account_id, c.endpoint, c.hour) = (u.account_id, u.endpoint, u.hour)
     and c.key_id is not distinct from u.key_id
     and c.member_id is not distinct from u.member_id
     and c.model is not distinct from u.model
     and c.group_id is not distinct from u.group_id
     and (c.old_requests, c.errors) = (u.requests, u.errors)),
  u.requests + u.errors);
