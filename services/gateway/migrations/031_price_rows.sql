-- Operator prices: rows added to (or overriding) the bundled price catalog, each in force from
-- its effective date. Cost is derived when read, so a row here reprices past calls in its window.
create table price_rows (
  model text not null,
  effective_from date,
  family text,
  display_name text,
  aliases text[] not null default '{}',
  rates jsonb not null,
  source text not null,
  created_by text not null,
  created_at timestamptz not null default now(),
  unique nulls not distinct (model, effective_from)
);
