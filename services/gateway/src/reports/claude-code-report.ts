import { z } from 'zod';
import { rowCounts, type Prices, type Priced } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import type { ClaudeCodeRow } from './claude-code-queries';
import type { Store } from '../store';
import { isoSeconds } from './buckets';
import { claudeCodeOutcomes, type Outcome } from './claude-code-outcomes';
import { timestamp } from './query';

const DAY = 86_400_000;

export const ClaudeCodeReportParams = z.object({
  /** The UTC day reported (a timestamp stands for its day). */
  starting_at: timestamp,
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  page: z.string().optional(),
});

const encodePage = (actor: string) => `page_${Buffer.from(actor).toString('base64url')}`;

function decodePage(token: string): string {
  const actor = token.startsWith('page_') ? Buffer.from(token.slice(5), 'base64url').toString() : '';
  if (!/^(user|key)_\w+$/.test(actor))
    throw new GatewayError('invalid_request_error', 'page: not a next_page token of this report.');
  return actor;
}

const round = (cents: number) => Math.round(cents * 1e6) / 1e6;
const priced = (c: { priced: boolean; cents: number }) => (c.priced ? round(c.cents) : null);

function modelBreakdown(prices: Prices, row: ClaudeCodeRow, day: Date) {
  const counts = rowCounts(row);
  return {
    model: row.model,
    tokens: {
      input: row.input_tokens,
      output: row.output_tokens,
      cache_read: row.cache_read_input_tokens,
      cache_creation: row.cache_creation_5m_tokens + row.cache_creation_1h_tokens,
    },
    // An unpriced model's cost is unknown, not zero: null, as the cost report leaves it out.
    estimated_cost: {
      currency: 'USD' as const,
      amount: priced(prices.callCost(row.model, counts, { at: day })),
    },
  };
}

/** The provider's names for the edit tools in `tool_actions`. */
const TOOL_ACTIONS = {
  Edit: 'edit_tool',
  MultiEdit: 'multi_edit_tool',
  Write: 'write_tool',
  NotebookEdit: 'notebook_edit_tool',
} as const;

function toolActions(o: Outcome) {
  const out: Record<string, { accepted: number; rejected: number }> = {};
  for (const [tool, name] of Object.entries(TOOL_ACTIONS))
    out[name] = { accepted: o.edits[tool]?.accepted ?? 0, rejected: o.edits[tool]?.rejected ?? 0 };
  return out;
}

/**
 * `GET /v1/organizations/usage_report/claude_code`, in the provider's shape: per actor (a
 * member, or a key that belongs to no member) for one UTC day, the sessions, tokens per model
 * and their cost in USD cents from the metered calls. Lines of code, commits, pull requests and
 * edit-tool decisions happen inside the client: they come from the member's Claude Code
 * OpenTelemetry export received at /otlp, and are null for an actor that sent none.
 */
export async function claudeCodeReport(
  { store, prices }: Priced<Pick<Store, 'claudeCode' | 'members' | 'keys' | 'telemetry'>>,
  accountId: string,
  q: z.infer<typeof ClaudeCodeReportParams>,
) {
  const day = Math.floor(q.starting_at.getTime() / DAY) * DAY;
  const [rows, outcomes] = await Promise.all([
    store.claudeCode.byActor(accountId, new Date(day), new Date(day + DAY)),
    claudeCodeOutcomes(store, accountId, new Date(day), new Date(day + DAY)),
  ]);
  const actors = new Map<string, { total: ClaudeCodeRow | null; models: ClaudeCodeRow[] }>();
  const told = new Map<string, Outcome>();
  for (const o of outcomes.values()) {
    told.set(o.member_id, o);
    if (!actors.has(o.member_id)) actors.set(o.member_id, { total: null, models: [] });
  }
  for (const row of rows) {
    const id = (row.member_id ?? row.key_id)!;
    if (!actors.has(id)) actors.set(id, { total: null, models: [] });
    if (row.total) actors.get(id)!.total = row;
    else actors.get(id)!.models.push(row);
  }
  const after = q.page === undefined ? null : decodePage(q.page);
  const ids = [...actors.keys()].sort().filter((id) => after === null || id > after);
  const page = ids.slice(0, q.limit);
  const [emails, names] = await Promise.all([
    store.members.emails(
      accountId,
      page.filter((id) => id.startsWith('user_')),
    ),
    store.keys.names(
      accountId,
      page.filter((id) => id.startsWith('key_')),
    ),
  ]);
  const data = page.map((id) => {
    const { total, models } = actors.get(id)!;
    const member = id.startsWith('user_');
    const o = told.get(id);
    return {
      date: isoSeconds(new Date(day)),
      actor: member
        ? { type: 'user_actor' as const, email_address: emails.get(id) ?? null }
        : { type: 'api_actor' as const, api_key_name: names.get(id) ?? null },
      organization_id: accountId,
      customer_type: 'api' as const,
      terminal_type: o?.terminal_type ?? null,
      core_metrics: {
        // Sessions seen by either side: calls carry the session id, telemetry counts its starts.
        num_sessions: Math.max(total?.sessions ?? 0, o?.sessions ?? 0, o?.sessions_seen ?? 0),
        lines_of_code: o ? { added: o.lines_added, removed: o.lines_removed } : null,
        commits_by_claude_code: o ? o.commits : null,
        pull_requests_by_claude_code: o ? o.pull_requests : null,
      },
      tool_actions: o ? toolActions(o) : null,
      model_breakdown: models
        .filter((m) => m.requests > 0)
        .map((m) => modelBreakdown(prices, m, new Date(day))),
      user_id: member ? id : null,
      api_key_id: member ? null : id,
      requests: total?.requests ?? 0,
      errors: total?.errors ?? 0,
    };
  });
  const hasMore = ids.length > page.length;
  return { data, has_more: hasMore, next_page: hasMore ? encodePage(page.at(-1)!) : null };
}
