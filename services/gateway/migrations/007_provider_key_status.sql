-- The provider's last verdict on an account's provider key: 'failing' after the provider
-- refused it (401/403 on a live call), back to 'ok' when a new key is set or a call succeeds.
alter table accounts add column provider_key_status text not null default 'ok'
  check (provider_key_status in ('ok', 'failing'));
alter table accounts add column provider_key_failed_at timestamptz;
