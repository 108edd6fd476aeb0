-- Claude Code's own OpenTelemetry export, received at /otlp/v1/metrics and /otlp/v1/logs and
-- attributed to the member whose credential sent it (never to what the payload claims).

-- Counters per member, UTC day, session, metric and breakdown (type, model, tool_name, decision,
-- language, source). A delta point adds to its row; a cumulative series (keyed by its start
-- time) replaces its row's value with the latest total.
create table claude_code_metrics (
  account_id text not null references accounts(id) on delete cascade,
  member_id text not null,
  key_id text not null,
  day date not null,
  session_id text not null,
  metric text not null,
  dims jsonb not null,
  series_start text not null,
  value float8 not null,
  updated_at timestamptz not null default now(),
  primary key (account_id, day, member_id, session_id, metric, dims, series_start)
);

-- Events (api_request, api_error, tool_decision, tool_result, user_prompt) without prompt text,
-- answers, raw bodies or tool inputs. `request_id` is the provider's request id Claude Code saw:
-- the same value as the call log's upstream_request_id, which joins a session's telemetry to its calls.
create table claude_code_events (
  account_id text not null references accounts(id) on delete cascade,
  member_id text not null,
  key_id text not null,
  session_id text not null,
  name text not null,
  at timestamptz not null,
  prompt_id text,
  request_id text,
  model text,
  cost_usd float8,
  duration_ms float8,
  input_tokens float8,
  output_tokens float8,
  cache_read_tokens float8,
  cache_creation_tokens float8,
  attrs jsonb not null default '{}',
  received_at timestamptz not null default now()
);
create index claude_code_events_member_time on claude_code_events (account_id, member_id, at);
create index claude_code_events_request on claude_code_events (account_id, request_id) where request_id is not null;

-- Where an account's received telemetry is relayed (its own OpenTelemetry collector), if anywhere.
create table otlp_relays (
  account_id text primary key references accounts(id) on delete cascade,
  url text not null,
  updated_at timestamptz not null default now()
);
