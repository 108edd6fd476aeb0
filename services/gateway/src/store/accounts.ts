import type { Sql } from './database';

export type AccountStatus = 'active' | 'suspended';

export interface AccountRecord {
  id: string;
  name: string;
  planId: string;
  status: AccountStatus;
  providerKeySealed: string | null;
  providerKeyHint: string | null;
  trialEndsAt: Date | null;
  createdAt: Date;
}

export interface MemberRecord {
  id: string;
  accountId: string;
  email: string;
  name: string;
  role: 'admin' | 'developer';
  status: 'active' | 'removed';
  createdAt: Date;
  removedAt: Date | null;
}

export interface PlanRecord {
  id: string;
  name: string;
  priceCents: number;
  currency: string;
  perSeat: boolean;
  maxSeats: number | null;
  trialDays: number;
}

const accountCols = (sql: Sql) => sql`
  id, name, plan_id as "planId", status, provider_key_sealed as "providerKeySealed",
  provider_key_hint as "providerKeyHint", trial_ends_at as "trialEndsAt", created_at as "createdAt"`;

const memberCols = (sql: Sql) => sql`
  id, account_id as "accountId", email, name, role, status, created_at as "createdAt", removed_at as "removedAt"`;

export function accountQueries(sql: Sql) {
  return {
    async plan(id: string): Promise<PlanRecord | null> {
      const [row] = await sql<PlanRecord[]>`
        select id, name, price_cents as "priceCents", currency, per_seat as "perSeat",
               max_seats as "maxSeats", trial_days as "trialDays"
        from plans where id = ${id}`;
      return row ?? null;
    },

    async plans(): Promise<PlanRecord[]> {
      return sql<PlanRecord[]>`
        select id, name, price_cents as "priceCents", currency, per_seat as "perSeat",
               max_seats as "maxSeats", trial_days as "trialDays"
        from plans order by price_cents`;
    },

    async create(a: Pick<AccountRecord, 'id' | 'name' | 'planId' | 'providerKeySealed' | 'providerKeyHint' | 'trialEndsAt'>): Promise<AccountRecord> {
      const [row] = await sql<AccountRecord[]>`
        insert into accounts (id, name, plan_id, provider_key_sealed, provider_key_hint, trial_ends_at)
        values (${a.id}, ${a.name}, ${a.planId}, ${a.providerKeySealed}, ${a.providerKeyHint}, ${a.trialEndsAt})
        returning ${accountCols(sql)}`;
      return row!;
    },

    async get(id: string): Promise<AccountRecord | null> {
      const [row] = await sql<AccountRecord[]>`select ${accountCols(sql)} from accounts where id = ${id}`;
      return row ?? null;
    },

    async list(opts: { search?: string; limit: number; afterId?: string }): Promise<AccountRecord[]> {
      const search = opts.search ? `%${opts.search.replace(/[\\%_]/g, '\\$&')}%` : null;
      return sql<AccountRecord[]>`
        select ${accountCols(sql)} from accounts
        where (${search}::text is null or name ilike ${search} or id = ${opts.search ?? null})
          and (${opts.afterId ?? null}::text is null or id > ${opts.afterId ?? null})
        order by id limit ${opts.limit}`;
    },

    async setStatus(id: string, status: AccountStatus): Promise<AccountRecord | null> {
      const [row] = await sql<AccountRecord[]>`update accounts set status = ${status} where id = ${id} returning ${accountCols(sql)}`;
      return row ?? null;
    },

    async setProviderKey(id: string, sealed: string, hint: string): Promise<AccountRecord | null> {
      const [row] = await sql<AccountRecord[]>`
        update accounts set provider_key_sealed = ${sealed}, provider_key_hint = ${hint}
        where id = ${id} returning ${accountCols(sql)}`;
      return row ?? null;
    },

    async createMember(m: Pick<MemberRecord, 'id' | 'accountId' | 'email' | 'name' | 'role'>): Promise<MemberRecord> {
      const [row] = await sql<MemberRecord[]>`
        insert into members (id, account_id, email, name, role)
        values (${m.id}, ${m.accountId}, ${m.email}, ${m.name}, ${m.role})
        returning ${memberCols(sql)}`;
      return row!;
    },

    async member(accountId: string, id: string): Promise<MemberRecord | null> {
      const [row] = await sql<MemberRecord[]>`select ${memberCols(sql)} from members where account_id = ${accountId} and id = ${id}`;
      return row ?? null;
    },
  };
}
