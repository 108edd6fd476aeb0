-- A plan is public (every account may move to it) or private: offered only to the accounts
-- the operator names (a plan made for one customer). Operators may put any account on any plan.
alter table plans add column visibility text not null default 'public'
  check (visibility in ('public', 'private'));
alter table plans add column offered_to text[] not null default '{}';

-- Budgets and alert webhooks work on every plan, as billing notices need them: the seeded
-- catalog said they were Scale's. Plans an operator has edited keep their own words.
update plans set features = '["one seat", "app keys", "usage reports", "spend budgets", "alerts"]'
  where id = 'solo' and features = '["one seat", "app keys", "usage reports"]'::jsonb;
update plans set features = '["a seat per member", "keys per seat", "combined account view", "usage reports", "spend budgets", "alerts"]'
  where id = 'team' and features = '["a seat per member", "keys per seat", "combined account view", "usage reports"]'::jsonb;
