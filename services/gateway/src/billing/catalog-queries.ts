import type { Sql } from '../store/database';

/** A plan as the catalog holds it: prices in the plan's currency (EUR cents), seat rules, what it includes. */
export interface CatalogPlan {
  id: string;
  name: string;
  priceCents: number;
  currency: string;
  perSeat: boolean;
  minSeats: number;
  maxSeats: number | null;
  trialDays: number;
  defaultLimitRpm: number | null;
  defaultLimitTpm: number | null;
  defaultLimitItpm: number | null;
  defaultLimitOtpm: number | null;
  defaultMonthlySpendCapCents: number | null;
  retentionDays: number;
  features: string[];
  stripePriceId: string | null;
  /** `public`: any account may move to it; `private`: only the accounts in `offeredTo`. */
  visibility: 'public' | 'private';
  offeredTo: string[];
}

export type CatalogPatch = Partial<Omit<CatalogPlan, 'id' | 'currency'>>;

/** May an account admin move `accountId` to the plan (an operator may move any account to any plan)? */
export const offeredTo = (p: CatalogPlan, accountId: string): boolean =>
  p.visibility === 'public' || p.offeredTo.includes(accountId);

const cols = (sql: Sql) => sql`
  id, name, price_cents as "priceCents", currency, per_seat as "perSeat", min_seats as "minSeats", max_seats as "maxSeats",
  trial_days as "trialDays", default_limit_rpm as "defaultLimitRpm", default_limit_tpm as "defaultLimitTpm",
  default_limit_itpm as "defaultLimitItpm", default_limit_otpm as "defaultLimitOtpm",
  default_monthly_spend_cap_cents as "defaultMonthlySpendCapCents", retention_days as "retentionDays", features,
  stripe_price_id as "stripePriceId", visibility, offered_to as "offeredTo"`;

export function catalogQueries(sql: Sql) {
  return {
    async list(): Promise<CatalogPlan[]> {
      return sql<CatalogPlan[]>`select ${cols(sql)} from plans order by price_cents, id`;
    },

    async get(id: string): Promise<CatalogPlan | null> {
      const [row] = await sql<CatalogPlan[]>`select ${cols(sql)} from plans where id = ${id}`;
      return row ?? null;
    },

    async byStripePrice(priceId: string): Promise<CatalogPlan | null> {
      const [row] = await sql<
        CatalogPlan[]
      >`select ${cols(sql)} from plans where stripe_price_id = ${priceId}`;
      return row ?? null;
    },

    /** Creates the plan or changes the fields given; existing accounts keep their plan id. */
    async upsert(
      id: string,
      p: CatalogPatch & Pick<CatalogPlan, 'name' | 'priceCents' | 'perSeat'>,
    ): Promise<CatalogPlan> {
      const [row] = await sql<CatalogPlan[]>`
        insert into plans (id, name, price_cents, per_seat, min_seats, max_seats, trial_days, default_limit_rpm, default_limit_tpm,
                           default_limit_itpm, default_limit_otpm, default_monthly_spend_cap_cents, retention_days, features, stripe_price_id, visibility, offered_to)
        values (${id}, ${p.name}, ${p.priceCents}, ${p.perSeat}, ${p.minSeats ?? 1}, ${p.maxSeats ?? null}, ${p.trialDays ?? 14},
                ${p.defaultLimitRpm ?? null}, ${p.defaultLimitTpm ?? null}, ${p.defaultLimitItpm ?? null},
                ${p.defaultLimitOtpm ?? null}, ${p.defaultMonthlySpendCapCents ?? null},
                ${p.retentionDays ?? 30}, ${sql.json(p.features ?? [])}, ${p.stripePriceId ?? null},
                ${p.visibility ?? 'public'}, ${p.offeredTo ?? []})
        on conflict (id) do update set
          name = excluded.name, price_cents = excluded.price_cents, per_seat = excluded.per_seat, min_seats = excluded.min_seats,
          max_seats = excluded.max_seats, trial_days = excluded.trial_days, default_limit_rpm = excluded.default_limit_rpm,
          default_limit_tpm = excluded.default_limit_tpm, default_limit_itpm = excluded.default_limit_itpm,
          default_limit_otpm = excluded.default_limit_otpm, default_monthly_spend_cap_cents = excluded.default_monthly_spend_cap_cents,
          retention_days = excluded.retention_days, features = excluded.features, stripe_price_id = excluded.stripe_price_id,
          visibility = excluded.visibility, offered_to = excluded.offered_to
        returning ${cols(sql)}`;
      return row!;
    },
  };
}

export type CatalogQueries = ReturnType<typeof catalogQueries>;
