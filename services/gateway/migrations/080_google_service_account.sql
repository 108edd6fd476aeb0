-- Issue 31: a Google Cloud upstream may hold a service-account JSON key (sealed like the other
-- credentials) from which the gateway mints short-lived access tokens (upstreams/google-token.ts).
alter table account_upstreams drop constraint if exists account_upstreams_auth_check;
alter table account_upstreams add constraint account_upstreams_auth_check
  check (auth in ('x-api-key', 'bearer', 'sigv4', 'google-service-account'));
