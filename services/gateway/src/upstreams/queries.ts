import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import type { UpstreamAuth, UpstreamKind } from './kinds';

/** One of an account's upstreams as stored; the credential stays sealed. */
export interface UpstreamRow {
  id: string;
  accountId: string;
  position: number;
  kind: UpstreamKind;
  baseUrl: string;
  auth: UpstreamAuth;
  credentialSealed: string;
  credentialHint: string;
  workspaceId: string | null;
  region: string | null;
  modelMap: Record<string, string>;
  refusedBetas: string[];
  refusedFields: string[];
  createdAt: Date;
}

export type NewUpstream = Omit<UpstreamRow, 'position' | 'createdAt'>;

const COLUMNS = `id, account_id as "accountId", position, kind, base_url as "baseUrl", auth,
  credential_sealed as "credentialSealed", credential_hint as "credentialHint",
  workspace_id as "workspaceId", region, model_map as "modelMap",
  refused_betas as "refusedBetas", refused_fields as "refusedFields", created_at as "createdAt"`;

/**
 * The account_upstreams table. Every change evicts the account's cached keys on every instance
 * (`account:<id>`), so the next call reads the new order (directory.ts keeps it per principal).
 */
export function upstreamQueries(sql: Sql) {
  return {
    async list(accountId: string): Promise<UpstreamRow[]> {
      return sql<UpstreamRow[]>`
        select ${sql.unsafe(COLUMNS)} from account_upstreams
        where account_id = ${accountId} order by position`;
    },

    /** One of the account's upstreams, or null when it has none of that id (never had, or removed). */
    async get(accountId: string, id: string): Promise<UpstreamRow | null> {
      const [row] = await sql<UpstreamRow[]>`
        select ${sql.unsafe(COLUMNS)} from account_upstreams where account_id = ${accountId} and id = ${id}`;
      return row ?? null;
    },

    /** Appends an upstream after the account's others. */
    async add(u: NewUpstream): Promise<UpstreamRow> {
      return inTransaction(sql, async (tx) => {
        // One writer per account at a time, so two adds cannot take the same position.
        await tx`select id from accounts where id = ${u.accountId} for update`;
        const [row] = await tx<UpstreamRow[]>`
          insert into account_upstreams (id, account_id, position, kind, base_url, auth, credential_sealed,
            credential_hint, workspace_id, region, model_map, refused_betas, refused_fields)
          values (${u.id}, ${u.accountId},
            (select coalesce(max(position), 0) + 1 from account_upstreams where account_id = ${u.accountId}),
            ${u.kind}, ${u.baseUrl}, ${u.auth}, ${u.credentialSealed}, ${u.credentialHint}, ${u.workspaceId},
            ${u.region}, ${tx.json(u.modelMap)}, ${u.refusedBetas}, ${u.refusedFields})
          returning ${tx.unsafe(COLUMNS)}`;
        await invalidate(tx, `account:${u.accountId}`);
        return row!;
      });
    },

    /** False when the account has no such upstream. */
    async remove(accountId: string, id: string): Promise<boolean> {
      return inTransaction(sql, async (tx) => {
        const gone =
          await tx`delete from account_upstreams where account_id = ${accountId} and id = ${id} returning id`;
        if (gone.length === 0) return false;
        await invalidate(tx, `account:${accountId}`);
        return true;
      });
    },

    /**
     * Puts the account's upstreams in the order given (every id once). Null when the ids are not
     * exactly the account's upstreams.
     */
    async reorder(accountId: string, ids: readonly string[]): Promise<UpstreamRow[] | null> {
      return inTransaction(sql, async (tx) => {
        await tx`select id from accounts where id = ${accountId} for update`;
        const have = await tx<
          { id: string }[]
        >`select id from account_upstreams where account_id = ${accountId}`;
        const known = new Set(have.map((r) => r.id));
        if (ids.length !== known.size || new Set(ids).size !== ids.length || !ids.every((i) => known.has(i)))
          return null;
        // The unique (account_id, position) check is deferred to the commit.
        for (const [i, id] of ids.entries())
          await tx`update account_upstreams set position = ${i + 1} where account_id = ${accountId} and id = ${id}`;
        await invalidate(tx, `account:${accountId}`);
        return tx<UpstreamRow[]>`
          select ${tx.unsafe(COLUMNS)} from account_upstreams where account_id = ${accountId} order by position`;
      });
    },
  };
}

export type UpstreamQueries = ReturnType<typeof upstreamQueries>;
