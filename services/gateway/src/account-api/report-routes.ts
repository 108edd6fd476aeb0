import { Hono } from 'hono';
import { z } from 'zod';
import { costReport, CostReportParams } from '../reports/cost-report';
import { listJson, listParams, pageQuery, parseQuery, timestamp } from '../reports/query';
import type { AdminEnv } from '../accounts/scope';
import { auditJson, requestJson } from './serialize';
import { accountWithPlan, type ServiceDeps } from '../accounts/service';
import { REPORT_ARRAYS, usageReport, UsageReportParams } from '../reports/usage-report';
import { ACCOUNT_SUMMARY_BY, summaryParams, usageSummary } from '../reports/usage-summary';

const ListRequests = z.object({
  ...listParams,
  api_key_id: z.string().min(1).optional(),
  user_id: z.string().min(1).optional(),
  group_id: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  status: z
    .union([z.enum(['ok', 'error']), z.coerce.number().int().min(100).max(599)], { error: "must be 'ok', 'error' or an HTTP status code" })
    .optional(),
  starting_at: timestamp.optional(),
  ending_at: timestamp.optional(),
});

const ListAudit = z.object({
  ...listParams,
  action: z.string().min(1).optional(),
  target_id: z.string().min(1).optional(),
  actor: z.string().min(1).optional(),
});

const Summary = summaryParams(ACCOUNT_SUMMARY_BY);

/** Usage, cost, the call log and the audit log of one account. */
export function reportRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/usage_report/messages', async (c) => {
    const q = parseQuery(c, UsageReportParams, REPORT_ARRAYS);
    return c.json(await usageReport(deps.store, c.var.scope.accountId, q, deps.clock()));
  });

  app.get('/cost_report', async (c) => {
    const q = parseQuery(c, CostReportParams, REPORT_ARRAYS);
    const { account, plan } = await accountWithPlan(deps, c.var.scope.accountId);
    return c.json(await costReport(deps.store, account, plan, q, deps.clock()));
  });

  /** Keygate's addition: totals by one dimension over a range, as `keygate usage` prints them. */
  app.get('/usage_summary', async (c) => {
    const q = parseQuery(c, Summary, REPORT_ARRAYS);
    return c.json(await usageSummary(deps.store, c.var.scope.accountId, q, deps.clock()));
  });

  app.get('/requests', async (c) => {
    const q = parseQuery(c, ListRequests);
    const page = await deps.store.requests.list(
      c.var.scope.accountId,
      {
        keyId: q.api_key_id ?? null,
        memberId: q.user_id ?? null,
        groupId: q.group_id ?? null,
        model: q.model ?? null,
        status: q.status ?? null,
        from: q.starting_at ?? null,
        to: q.ending_at ?? null,
      },
      pageQuery(q),
    );
    return c.json(listJson(page, requestJson));
  });

  app.get('/audit_log', async (c) => {
    const q = parseQuery(c, ListAudit);
    const page = await deps.store.audit.list(c.var.scope.accountId, { action: q.action ?? null, targetId: q.target_id ?? null, actor: q.actor ?? null }, pageQuery(q));
    return c.json(listJson(page, auditJson));
  });

  return app;
}
