-- Two Claude Code windows sharing one credentials file refresh at the same moment with the same
-- refresh token. The second is not a thief: for a short window after a refresh (30 s), the same
-- spent token gets the same answer again (sealed here, as provider keys are), instead of ending
-- the sign-in. Okta calls this a refresh token grace period, Auth0 a reuse interval; RFC 9700
-- §4.14.2 leaves it to the server (all read 2026-11-29).
alter table idp_refresh_spent add column if not exists answer_sealed text;
