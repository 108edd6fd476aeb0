import { accountQueries } from './tenancy/account-queries';
import { agentTreeQueries } from './reports/agent-tree-queries';
import { alertQueries } from './budgets/alert-queries';
import { auditQueries } from './tenancy/audit-queries';
import { budgetQueries } from './budgets/budget-queries';
import { callQueries } from './call-log/call-queries';
import { catalogQueries } from './billing/catalog-queries';
import { claudeCodeQueries } from './reports/claude-code-queries';
import { claudeGatewayQueries } from './claude-gateway/claude-gateway-queries';
import { dashboardQueries } from './dashboard/dashboard-queries';
import { federationQueries } from './federation/federation-queries';
import { identityQueries } from './identity/identity-queries';
import { inviteQueries } from './accounts/invite-queries';
import { invoiceQueries } from './billing/invoice-queries';
import { keyQueries } from './tenancy/key-queries';
import { memberQueries } from './tenancy/member-queries';
import { objectQueries } from './surface/object-queries';
import { partitionQueries } from './call-log/partition-queries';
import { priceQueries } from './pricing/price-queries';
import { rbacGroupQueries } from './accounts/rbac-group-queries';
import { reconciliationQueries } from './billing/reconciliation-queries';
import { scimQueries } from './identity-api/scim-queries';
import { sealedQueries } from './accounts/sealed-queries';
import { spendLimitQueries } from './budgets/spend-limit-queries';
import { rateLimitQueries } from './budgets/rate-limit-queries';
import { spendQueries } from './budgets/spend-queries';
import { subscriptionQueries } from './billing/subscription-queries';
import { telemetryQueries } from './reports/telemetry-queries';
import { usageQueries } from './call-log/usage-queries';
import { databaseHealth, type Database, type Store } from './store';

declare module './store' {
  interface Store {
    accounts: ReturnType<typeof accountQueries>;
    members: ReturnType<typeof memberQueries>;
    keys: ReturnType<typeof keyQueries>;
    calls: ReturnType<typeof callQueries>;
    claudeCode: ReturnType<typeof claudeCodeQueries>;
    partitions: ReturnType<typeof partitionQueries>;
    usage: ReturnType<typeof usageQueries>;
    audit: ReturnType<typeof auditQueries>;
    budgets: ReturnType<typeof budgetQueries>;
    rbacGroups: ReturnType<typeof rbacGroupQueries>;
    invites: ReturnType<typeof inviteQueries>;
    spendLimits: ReturnType<typeof spendLimitQueries>;
    rateLimits: ReturnType<typeof rateLimitQueries>;
    alerts: ReturnType<typeof alertQueries>;
    spend: ReturnType<typeof spendQueries>;
    sealed: ReturnType<typeof sealedQueries>;
    prices: ReturnType<typeof priceQueries>;
    agentTree: ReturnType<typeof agentTreeQueries>;
    telemetry: ReturnType<typeof telemetryQueries>;
  }
}

/** The kernel's store and each capability's queries: what the runtime opens and the test kit reaches. */
export type WholeStore = Store & {
  objects: ReturnType<typeof objectQueries>;
  claudeGateway: ReturnType<typeof claudeGatewayQueries>;
  identity: ReturnType<typeof identityQueries>;
  scim: ReturnType<typeof scimQueries>;
  federation: ReturnType<typeof federationQueries>;
  dashboard: ReturnType<typeof dashboardQueries>;
  catalog: ReturnType<typeof catalogQueries>;
  subscriptions: ReturnType<typeof subscriptionQueries>;
  invoices: ReturnType<typeof invoiceQueries>;
  reconciliations: ReturnType<typeof reconciliationQueries>;
};

/** The gateway's only door to PostgreSQL: every room's queries on one database (runtime and test kit alike). */
export function createStore(db: Database): WholeStore {
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
    health: databaseHealth(db),
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
