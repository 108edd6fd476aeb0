import type { Sql } from '../store/database';

/** Where sealed secrets live: the provider key of an account, the signing secret of a webhook endpoint. */
export type SealedColumn = 'provider-key' | 'webhook-secret';

export interface SealedValue {
  column: SealedColumn;
  row: string;
  sealed: string;
}

/** Reads and rewrites sealed values in place, for re-sealing those of an earlier format. */
export function sealedQueries(sql: Sql) {
  return {
    /** Sealed values whose text starts with `prefix` (such as `v1.`). */
    async withPrefix(prefix: string): Promise<SealedValue[]> {
      const like = `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
      const accounts = await sql<{ row: string; sealed: string }[]>`
        select id as row, provider_key_sealed as sealed from accounts where provider_key_sealed like ${like}`;
      const hooks = await sql<{ row: string; sealed: string }[]>`
        select id as row, secret_sealed as sealed from webhook_endpoints where secret_sealed like ${like}`;
      return [
        ...accounts.map((r) => ({ column: 'provider-key' as const, ...r })),
        ...hooks.map((r) => ({ column: 'webhook-secret' as const, ...r })),
      ];
    },

    /** One account's sealed provider key, if any account has one (does the secret in use open it?). */
    async anyProviderKey(): Promise<{ id: string; sealed: string } | undefined> {
      const [row] = await sql<{ id: string; sealed: string }[]>`
        select id, provider_key_sealed as sealed from accounts where provider_key_sealed is not null limit 1`;
      return row;
    },

    /** Replaces a sealed value if it is still the one read (another instance may have re-sealed it first). */
    async replace(v: SealedValue, next: string): Promise<boolean> {
      const rows =
        v.column === 'provider-key'
          ? await sql`update accounts set provider_key_sealed = ${next} where id = ${v.row} and provider_key_sealed = ${v.sealed} returning id`
          : await sql`update webhook_endpoints set secret_sealed = ${next} where id = ${v.row} and secret_sealed = ${v.sealed} returning id`;
      return rows.length === 1;
    },
  };
}
