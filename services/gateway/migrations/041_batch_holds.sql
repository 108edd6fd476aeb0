-- A batch created under a hard spend cap holds its ceiling (every request's input and max_tokens
-- at the batch price) on the capped counters until its results are recorded; the counters held
-- are kept with the batch, so whichever instance records the results (after a restart too)
-- gives the hold back.
alter table batches
  add column hold_id text,
  add column hold_counters jsonb;
