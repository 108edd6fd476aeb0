import type { Sql } from '../store/database';
import { newId } from '../lib/ids';
import { keyset, type Page, type PageQuery } from '../store/pagination';

/** Who changed something: an admin key id (`key_…`), or `operator` / `cli`. */
export interface AuditEntry {
  actor: string;
  action: string;
  targetId: string | null;
  details?: Record<string, unknown>;
}

export interface AuditRecord extends AuditEntry {
  id: string;
  accountId: string;
  createdAt: Date;
}

export interface AuditFilter {
  action?: string | null;
  targetId?: string | null;
  actor?: string | null;
}

/**
 * Writes one audit row; called inside the transaction that makes the change. Stamped with
 * the clock rather than the transaction's start; the list orders by `seq`, the write order,
 * since entries of one change can share a timestamp.
 */
export async function writeAudit(tx: Sql, accountId: string, e: AuditEntry): Promise<void> {
  await tx`
    insert into audit_log (id, account_id, actor, action, target_id, details, created_at)
    values (${newId('audit')}, ${accountId}, ${e.actor}, ${e.action}, ${e.targetId}, ${(e.details ?? null) as never}, clock_timestamp())`;
}

export function auditQueries(sql: Sql) {
  return {
    async list(accountId: string, f: AuditFilter, q: PageQuery): Promise<Page<AuditRecord>> {
      const k = keyset(sql, 'audit_log', accountId, q, 'seq');
      const rows = await sql<AuditRecord[]>`
        select t.id, t.account_id as "accountId", t.actor, t.action, t.target_id as "targetId", t.details,
               t.created_at as "createdAt"
        from audit_log t
        where t.account_id = ${accountId}
          and (${f.action ?? null}::text is null or t.action = ${f.action ?? null})
          and (${f.targetId ?? null}::text is null or t.target_id = ${f.targetId ?? null})
          and (${f.actor ?? null}::text is null or t.actor = ${f.actor ?? null})
          ${k.where}
        ${k.order} limit ${k.limit}`;
      return k.finish(rows);
    },
  };
}
