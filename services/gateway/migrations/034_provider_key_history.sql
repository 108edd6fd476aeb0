-- Which provider key an account's calls went out with, and since when: the reconciliation with
-- the provider's usage report per API key attributes each hour of Keygate's usage to the key in
-- force then. Only what the provider itself shows of a key (its first 16 characters and last 4,
-- as in the Admin API's partial_key_hint) is kept here; the key stays sealed on the account.
create table provider_key_history (
  id bigserial primary key,
  account_id text not null,
  since timestamptz not null default now(),
  key_head text not null,
  key_tail text not null
);
create index provider_key_history_account on provider_key_history (account_id, since);
