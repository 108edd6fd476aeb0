import { writeAudit, type AuditEntry } from './audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate, type Invalidation } from '../store/invalidations';

/**
 * One audited change: runs `change` in a transaction and, when it found its row, writes the
 * audit entries and tells every gateway instance to drop what it cached, in that same
 * transaction (so a rollback leaves no trace and a commit reaches everyone).
 */
export function auditedChange<T>(
  sql: Sql,
  accountId: string,
  invalidation: Invalidation,
  change: (t: Sql) => Promise<T | undefined>,
  audit: (row: T) => AuditEntry[],
): Promise<T | null> {
  return inTransaction(sql, async (t) => {
    const row = await change(t);
    if (row === undefined) return null;
    for (const entry of audit(row)) await writeAudit(t, accountId, entry);
    await invalidate(t, invalidation);
    return row;
  });
}
