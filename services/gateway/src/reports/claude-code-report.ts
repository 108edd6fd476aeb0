import { z } from 'zod';
import { callCost, rowCounts } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import type { ClaudeCodeRow, Store } from '../store';
import { isoSeconds } from './buckets';
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

function modelBreakdown(row: ClaudeCodeRow, day: Date) {
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
    estimated_cost: { currency: 'USD' as const, amount: priced(callCost(row.model, counts, { at: day })) },
  };
}

/**
 * `GET /v1/organizations/usage_report/claude_code`, in the provider's shape, from what the
 * gateway sees: per actor (a member, or a key that belongs to no member) for one UTC day,
 * the sessions (distinct `x-claude-code-session-id` groups), tokens per model and their
 * estimated cost in USD cents at list prices. What happens inside the client (lines of
 * code, commits, pull requests, tool decisions) never crosses the gateway: those are null.
 */
export async function claudeCodeReport(
  store: Pick<Store, 'claudeCode' | 'members' | 'keys'>,
  accountId: string,
  q: z.infer<typeof ClaudeCodeReportParams>,
) {
  const day = Math.floor(q.starting_at.getTime() / DAY) * DAY;
  const rows = await store.claudeCode.byActor(accountId, new Date(day), new Date(day + DAY));
  const actors = new Map<string, { total: ClaudeCodeRow | null; models: ClaudeCodeRow[] }>();
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
    return {
      date: isoSeconds(new Date(day)),
      actor: member
        ? { type: 'user_actor' as const, email_address: emails.get(id) ?? null }
        : { type: 'api_actor' as const, api_key_name: names.get(id) ?? null },
      organization_id: accountId,
      customer_type: 'api' as const,
      terminal_type: null,
      core_metrics: {
        num_sessions: total?.sessions ?? 0,
        lines_of_code: null,
        commits_by_claude_code: null,
        pull_requests_by_claude_code: null,
      },
      tool_actions: null,
      model_breakdown: models.filter((m) => m.requests > 0).map((m) => modelBreakdown(m, new Date(day))),
      user_id: member ? id : null,
      api_key_id: member ? null : id,
      requests: total?.requests ?? 0,
      errors: total?.errors ?? 0,
    };
  });
  const hasMore = ids.length > page.length;
  return { data, has_more: hasMore, next_page: hasMore ? encodePage(page.at(-1)!) : null };
}
