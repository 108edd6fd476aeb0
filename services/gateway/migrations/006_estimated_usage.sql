-- A stream that ended before the provider's final message_delta (client gone, upstream cut,
-- timeout) has no final output count: its output_tokens is the gateway's estimate from the
-- content it forwarded (never below the provider's last count), and the row says so.
alter table calls add column estimated boolean not null default false;
