import { accountQueries } from './accounts';
import { alertQueries } from './alerts';
import { sealedQueries } from './sealed';
import { auditQueries } from './audit';
import { budgetQueries } from './budgets';
import { rateLimitQueries } from './rate-limits';
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
import { spendQueries } from './spend';
import { reconciliationQueries } from './reconciliations';
import { subscriptionQueries } from './subscriptions';
import { usageQueries } from './usage';
import { objectQueries } from './objects';
import { agentTreeQueries } from './agent-tree';
import { telemetryQueries } from './telemetry';
import { claudeGatewayQueries } from './claude-gateway';
import { identityQueries } from './identity';
export type { ScimGroupRecord, ScimMember, ScimTokenRecord } from './scim';
import { scimQueries } from './scim';
import { rbacGroupQueries } from './rbac-groups';
import { inviteQueries } from './invites';
import { federationQueries } from './federation';
import { spendLimitQueries } from './spend-limits';

export type {
  AccountFilter,
  AccountPatch,
  AccountRecord,
  AccountStatus,
  MemberRecord,
  PlanRecord,
  ProviderKeyStatus,
} from './accounts';
export { offeredTo, type CatalogPatch, type CatalogPlan } from './catalog';
export type { InvoiceLine, InvoiceRecord, NewInvoice, NoticeRecord, SeatRecord } from './invoices';
export type {
  Cause,
  Decide,
  SubscriptionPatch,
  SubscriptionRecord,
  SubscriptionState,
  TransitionRecord,
} from './subscriptions';
export type { RateLimitScope, RateLimitValues, ScopeRateLimitRecord } from './rate-limits';
export type { AuditEntry, AuditFilter, AuditRecord } from './audit';
export type { GroupCallers, GroupRetries, SessionKind, SessionRecord, TroubleRow } from './dashboard';
export {
  ALERTS_CHANNEL,
  EndpointLimitError,
  insertAlertEvent,
  type ClaimedDelivery,
  type DeliveryRecord,
  type NewAlertEvent,
  type WebhookEndpointPatch,
  type WebhookEndpointRecord,
} from './alerts';
export type { BudgetFilter, BudgetPatch, BudgetPeriod, BudgetRecord, BudgetScope, SpendRow } from './budgets';
export type { HoldRow } from './spend';
export type { KeyFilter, KeyKind, KeyPatch, KeyRecord, KeyStatus, ResolvedKey } from './keys';
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
export type { CallFilter } from './calls';
export type { CallPartition } from './partitions';
export type { PriceRowRecord } from './prices';
export type { ReconciliationRecord } from './reconciliations';
export type { ClaudeCodeRow } from './claude-code';
export type { AgentRow } from './agent-tree';
export type { EventRow, JoinRow, MetricRow, OutcomeRow, TelemetrySender } from './telemetry';
export type { BatchHold, ObjectKind, ObjectOwner, OpenBatch } from './objects';
export {
  IdentityLinkError,
  type IdentityProviderInput,
  type IdentityProviderRecord,
  type IdpPerson,
  type IdpSessionRecord,
} from './identity';
export { RemovedByAdminError } from './scim';
export type { UsageDimension, UsageFilters, UsageQuery, UsageRow } from './usage';
export { INVALIDATION_CHANNEL, watchInvalidations, type Invalidation } from './invalidations';
export { onCommitted, openDatabase, type Database, type Sql } from './database';
export { databaseUnavailable } from '../lib/database-unavailable';
export { DatabaseWatch } from './database-watch';
export { migrate } from './migrate';
export type { GroupMemberRecord, ModelPolicyRecord, RbacGroupRecord } from './rbac-groups';
export {
  DuplicateNameError,
  InviteExistsError,
  type InviteRecord,
  type ServiceAccountRecord,
} from './invites';
export type {
  FederationIssuerRecord,
  FederationRuleRecord,
  IssuerPatch,
  JwksSource,
  LiveRule,
  RuleMatch,
  RulePatch,
} from './federation-records';
export type {
  IncreaseRequestRecord,
  IncreaseStatus,
  SpendLimitRecord,
  SpendLimitScope,
} from './spend-limits';

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
    usage: usageQueries(db.sql),
    audit: auditQueries(db.sql),
    budgets: budgetQueries(db.sql),
    rbacGroups: rbacGroupQueries(db.sql),
    invites: inviteQueries(db.sql),
    federation: federationQueries(db.sql),
    spendLimits: spendLimitQueries(db.sql),
    rateLimits: rateLimitQueries(db.sql),
    alerts: alertQueries(db.sql),
    spend: spendQueries(db.sql),
    sealed: sealedQueries(db.sql),
    /** What readiness asks, on a connection of its own: does the database answer, and is every migration applied. */
    health: {
      ping: async () => void (await db.probe`select 1`),
      pendingMigrations: () => pendingMigrations(db.probe),
    },
    dashboard: dashboardQueries(db.sql),
    catalog: catalogQueries(db.sql),
    prices: priceQueries(db.sql),
    objects: objectQueries(db.sql),
    agentTree: agentTreeQueries(db.sql),
    telemetry: telemetryQueries(db.sql),
    claudeGateway: claudeGatewayQueries(db.sql),
    identity: identityQueries(db.sql),
    scim: scimQueries(db.sql),
    reconciliations: reconciliationQueries(db.sql),
    subscriptions: subscriptionQueries(db.sql),
    invoices: invoiceQueries(db.sql),
    close: () => db.close(),
  };
}

export type Store = ReturnType<typeof createStore>;
