import { accountQueries } from './accounts';
import { auditQueries } from './audit';
import { callQueries } from './calls';
import { claudeCodeQueries } from './claude-code';
import type { Database } from './database';
import { keyQueries } from './keys';
import { memberQueries } from './members';
import { pendingMigrations } from './migrate';
import { requestQueries } from './requests';
import { usageQueries } from './usage';

export type { AccountFilter, AccountPatch, AccountRecord, AccountStatus, MemberRecord, PlanRecord, ProviderKeyStatus } from './accounts';
export type { AuditEntry, AuditFilter, AuditRecord } from './audit';
export type { KeyFilter, KeyPatch, KeyRecord, KeyStatus, ResolvedKey } from './keys';
export { DuplicateMemberError, LastAdminError, PlanTooSmallError, SeatLimitError, type MemberFilter, type MemberRole, type SeatSpan } from './members';
export type { Page, PageQuery } from './pagination';
export type { RequestFilter, RequestRecord } from './requests';
export type { ClaudeCodeRow } from './claude-code';
export type { UsageDimension, UsageFilters, UsageQuery, UsageRow } from './usage';
export { INVALIDATION_CHANNEL, watchInvalidations, type Invalidation } from './invalidations';
export { openDatabase, type Database, type Sql } from './database';
export { migrate } from './migrate';

/** The gateway's only door to PostgreSQL. */
export function createStore(db: Database) {
  return {
    db,
    accounts: accountQueries(db.sql),
    members: memberQueries(db.sql),
    keys: keyQueries(db.sql),
    calls: callQueries(db.sql),
    claudeCode: claudeCodeQueries(db.sql),
    requests: requestQueries(db.sql),
    usage: usageQueries(db.sql),
    audit: auditQueries(db.sql),
    /** What readiness asks: does the database answer, and is every migration applied. */
    health: {
      ping: async () => void (await db.sql`select 1`),
      pendingMigrations: () => pendingMigrations(db.sql),
    },
    close: () => db.close(),
  };
}

export type Store = ReturnType<typeof createStore>;
