import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { accountWithPlan, type ServiceDeps } from '../accounts/service';
import { operation } from '../lib/operation';
import { claudeCodeReport, ClaudeCodeReportParams } from '../reports/claude-code-report';
import { claudeCodeSessions, ClaudeCodeSessionsParams } from '../reports/claude-code-sessions';
import { costReport, CostReportParams } from '../reports/cost-report';
import { cacheReport, CacheReportParams } from '../reports/cache-report';
import { MISSING_FILTERS } from '../reports/params';
import { listJson, listParams, pageQuery, timestamp } from '../reports/query';
import { usageReport, UsageReportParams } from '../reports/usage-report';
import { auditJson, callJson } from './serialize';
import { ACCOUNT_SUMMARY_BY, summaryParams, usageSummary } from '../reports/usage-summary';

const ListCalls = z.object({
  ...listParams,
  api_key_id: z.string().min(1).optional(),
  user_id: z.string().min(1).optional(),
  group_id: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  /** As the call log records it: `messages`, `count_tokens`, `POST /v1/files`, … */
  endpoint: z.string().min(1).max(200).optional(),
  status: z
    .union([z.enum(['ok', 'error']), z.coerce.number().int().min(100).max(599)], {
      error: "must be 'ok', 'error' or an HTTP status code",
    })
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
  /** The account's reporting zone: day buckets start at its local midnight. */
  const zoneOf = async (accountId: string) => (await accountWithPlan(deps, accountId)).account.timeZone;
  const tag = 'Usage and cost';
  /** A report over a range in the account's zone, at the gateway's clock; filters it lacks are refused. */
  const zonedReport = <Q extends z.ZodObject, R>(
    path: string,
    summary: string,
    query: Q,
    report: (
      store: ServiceDeps['store'],
      accountId: string,
      q: z.infer<Q>,
      now: number,
      zone: string,
    ) => Promise<R>,
  ) =>
    app.get(path, operation({ tag, summary, query, refused: MISSING_FILTERS }), async (c) => {
      const { accountId } = c.var.scope;
      const q = c.req.valid('query') as z.infer<Q>;
      return c.json(
        (await report(deps.store, accountId, q, deps.clock(), await zoneOf(accountId))) as object,
      );
    });

  zonedReport(
    '/usage_report/messages',
    "Token usage in minute, hour or day buckets, in the provider's usage-report shape",
    UsageReportParams,
    usageReport,
  );

  const claudeCode = operation({
    tag,
    summary: 'Claude Code sessions, tokens and estimated cost per member (actor) and model, for one UTC day',
    query: ClaudeCodeReportParams,
  });
  app.get('/usage_report/claude_code', claudeCode, async (c) =>
    c.json(await claudeCodeReport(deps.store, c.var.scope.accountId, c.req.valid('query'))),
  );

  const sessions = operation({
    tag,
    summary:
      'Claude Code cost per session and per agent tree (main agent and subagents), per member and UTC day',
    query: ClaudeCodeSessionsParams,
  });
  app.get('/usage_report/claude_code/sessions', sessions, async (c) =>
    c.json({ data: await claudeCodeSessions(deps.store, c.var.scope.accountId, c.req.valid('query')) }),
  );

  zonedReport(
    '/cost_report',
    "Estimated USD cost per day of the account's time zone, in cents as decimal strings",
    CostReportParams,
    costReport,
  );

  /** Keygate's addition: totals by one dimension over a range, as `keygate usage` prints them. */
  zonedReport('/usage_summary', 'Usage totals over a range by one dimension', Summary, usageSummary);

  zonedReport(
    '/cache_report',
    'Prompt caching by member or key: hit rate, 5-minute and 1-hour writes, dollars saved by reads',
    CacheReportParams,
    cacheReport,
  );

  app.get(
    '/requests',
    operation({
      tag: 'Call log',
      summary: 'The call log, newest first, one page at a time',
      query: ListCalls,
    }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await deps.store.calls.list(
        c.var.scope.accountId,
        {
          keyId: q.api_key_id ?? null,
          memberId: q.user_id ?? null,
          groupId: q.group_id ?? null,
          model: q.model ?? null,
          endpoint: q.endpoint ?? null,
          status: q.status ?? null,
          from: q.starting_at ?? null,
          to: q.ending_at ?? null,
        },
        pageQuery(q),
      );
      return c.json(listJson(page, callJson));
    },
  );

  app.get(
    '/audit_log',
    operation({ tag: 'Audit log', summary: 'Who changed what, newest first', query: ListAudit }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await deps.store.audit.list(
        c.var.scope.accountId,
        { action: q.action ?? null, targetId: q.target_id ?? null, actor: q.actor ?? null },
        pageQuery(q),
      );
      return c.json(listJson(page, auditJson));
    },
  );

  return app;
}
