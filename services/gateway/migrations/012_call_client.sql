-- Which client made a call, as far as its headers tell ('claude_code', else null): the Claude
-- Code usage report counts its sessions and tokens per member and day. That report reads one
-- account's Claude Code calls of one day through this partial index.
alter table calls add column client text;
create index calls_claude_code on calls (account_id, created_at) where client = 'claude_code';

-- Reports of one account read its rollups through the rollup key (account_id, endpoint, hour, …).
-- An index on hour alone looked cheaper to the planner (the table is in hour order) and made
-- each report read every account's rows of the range: 9.4 ms against 1.5 ms for a 31-day page
-- at 1M calls (bench/reports-1m.ts). With account_id second it still serves the cross-account view.
drop index usage_hourly_hour;
create index usage_hourly_hour_account on usage_hourly (hour, account_id);
