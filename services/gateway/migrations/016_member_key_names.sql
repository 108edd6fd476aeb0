-- Keys made for a member without a name were all called "live key" (or "live key for app/env"):
-- a list of a team's keys read the same on every row. Such keys get today's default name, which
-- names the member ("live key of alice@acme.test for claude-code/laptop"). Only names exactly
-- equal to the old default are changed; a name someone chose stays.
update api_keys k
set name = k.kind || ' key of ' || m.email
  || coalesce(' for ' || nullif(concat_ws('/', k.app, k.environment), ''), '')
from members m
where m.id = k.member_id
  and k.name = k.kind || ' key' || coalesce(' for ' || nullif(concat_ws('/', k.app, k.environment), ''), '');
