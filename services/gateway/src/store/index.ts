import { accountQueries } from './accounts';
import { alertQueries } from './alerts';
import { auditQueries } from './audit';
import { budgetQueries } from './budgets';
import { callQueries } from './calls';
import { claudeCodeQueries } from './claude-code';
import { dashboardQueries } from './dashboard';
import type { Database } from './database';
import { keyQueries } from './keys';
import { invoiceQueries } from './invoices';
import { memberQueries } from './members';
import { pendingMigrations } from './migrate';
import { catalogQueries } from './catalog';
import { partitionQueries } from './partitions';
import { priceQueries } from './prices';
import { reconciliationQueries } from './reconciliations';
import { requestQueries } from './requests';
import { subscriptionQueries } from './subscriptions';
import { usageQueries } from './usage';

export type {
  AccountFilter,
  AccountPatch,
  AccountRecord,
  AccountStatus,
  MemberRecord,
  PlanRecord,
  ProviderKeyStatus,
} from './accounts';
export type { CatalogPatch, CatalogPlan } from './catalog';
export type { InvoiceLine, InvoiceRecord, NewInvoice, NoticeRecord, SeatRecord } from './invoices';
export type {
  Cause,
  Decide,
  SubscriptionPatch,
  SubscriptionRecord,
  SubscriptionState,
  TransitionRecord,
} from './subscriptions';
export type { AuditEntry, AuditFilter, AuditRecord } from './audit';
export type { GroupRetries, SessionKind, SessionRecord, TroubleRow } from './dashboard';
export {
  ALERTS_CHANNEL,
  insertAlertEvent,
  type ClaimedDelivery,
  type DeliveryRecord,
  type NewAlertEvent,
  type WebhookEndpointPatch,
  type WebhookEndpointRecord,
} from './alerts';
export type { BudgetFilter, BudgetPatch, BudgetPeriod, BudgetRecord, BudgetScope, SpendRow } from './budgets';
export type { KeyFilter, KeyPatch, KeyRecord, KeyStatus, ResolvedKey } from './keys';
export {
  DuplicateMemberError,
  LastAdminError,
  PlanTooSmallError,
  SeatLimitError,
  type MemberFilter,
  type MemberRole,
  type SeatSpan,
} from './members';
export type { Page, PageQuery } from './pagination';
export type { CallPartition } from './partitions';
export type { PriceRowRecord } from './prices';
export type { ReconciliationRecord } from './reconciliations';
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
    partitions: partitionQueries(db.sql),
    requests: requestQueries(db.sql),
    usage: usageQueries(db.sql),
    audit: auditQueries(db.sql),
    budgets: budgetQueries(db.sql),
    alerts: alertQueries(db.sql),
    /** What readiness asks: does the database answer, and is every migration applied. */
    health: {
      ping: async () => void (await db.sql`select 1`),
      pendingMigrations: () => pendingMigrations(db.sql),
    },
    dashboard: dashboardQueries(db.sql),
    catalog: catalogQueries(db.sql),
    prices: priceQueries(db.sql),
    reconciliations: reconciliationQueries(db.sql),
    subscriptions: subscriptionQueries(db.sql),
    invoices: invoiceQueries(db.sql),
    close: () => db.close(),
  };
}

export type Store = ReturnType<typeof createStore>;
