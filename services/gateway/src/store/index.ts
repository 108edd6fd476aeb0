import type { Database } from './database';

export type {
  AccountFilter,
  AccountPatch,
  AccountRecord,
  AccountStatus,
  MemberRecord,
  PlanRecord,
  ProviderKeyStatus,
} from './accounts';
export type { AuditEntry, AuditFilter, AuditRecord } from './audit';
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
export type { ClaudeCodeRow } from './claude-code';
export type { AgentRow } from './agent-tree';
export type { EventRow, JoinRow, MetricRow, OutcomeRow, TelemetrySender } from './telemetry';
export type { UsageDimension, UsageFilters, UsageQuery, UsageRow } from './usage';
export { INVALIDATION_CHANNEL, watchInvalidations, type Invalidation } from './invalidations';
export { openDatabase, type Database, type Sql } from './database';
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
  IncreaseRequestRecord,
  IncreaseStatus,
  SpendLimitRecord,
  SpendLimitScope,
} from './spend-limits';

/**
 * What every room reaches as `deps.store`: the database, and each room's queries. The queries live
 * in their rooms (`*-queries.ts`); the composition root (`../stores.ts`) adds their fields here and
 * builds them, so this room imports none of them.
 */
export interface Store {
  db: Database;
  /** What readiness asks, on a connection of its own: does the database answer, and is every migration applied. */
  health: { ping(): Promise<void>; pendingMigrations(): Promise<string[]> };
  close(): Promise<void>;
}
