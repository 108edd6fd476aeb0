-- Which client made a call, as far as its headers tell ('claude_code', else null): the Claude
-- Code usage report counts its sessions and tokens per member and day. That report reads one
-- account's Claude Code calls of one day through this partial index.
alter table calls add column client text;
create index calls_claude_code on calls (account_id, created_at) where client = 'claude_code';
