import type { CallRecord } from '../call-log/record';
import type { Sql } from './database';
import { keyset, type Page, type PageQuery } from './pagination';

/** One row of the call log, as the gateway recorded it. */
export type RequestRecord = CallRecord;

export interface RequestFilter {
  keyId?: string | null;
  memberId?: string | null;
  groupId?: string | null;
  app?: string | null;
  environment?: string | null;
  model?: string | null;
  /** `ok` (below 400, no error), `error`, or one HTTP status. */
  status?: 'ok' | 'error' | number | null;
  from?: Date | null;
  to?: Date | null;
}

export function requestQueries(sql: Sql) {
  return {
    /** The call log, newest first, read through the (account_id, created_at) index. */
    async list(accountId: string, f: RequestFilter, q: PageQuery): Promise<Page<RequestRecord>> {
      const k = keyset(sql, 'calls', accountId, q);
      const code = typeof f.status === 'number' ? f.status : null;
      const outcome = typeof f.status === 'string' ? f.status : null;
      const rows = await sql<RequestRecord[]>`
        select t.id, t.account_id as "accountId", t.key_id as "keyId", t.member_id as "memberId", t.app, t.environment,
               t.group_id as "groupId", t.client, t.endpoint, t.model, t.stream, t.status, t.error_type as "errorType", t.usage,
               t.upstream_message_id as "upstreamMessageId", t.upstream_request_id as "upstreamRequestId",
               t.retry_count as "retryCount", t.latency_ms as "latencyMs", t.ttfb_ms as "ttfbMs", t.partial, t.estimated, t.batch,
               t.created_at as "createdAt"
        from calls t
        where t.account_id = ${accountId}
          and (${f.keyId ?? null}::text is null or t.key_id = ${f.keyId ?? null})
          and (${f.memberId ?? null}::text is null or t.member_id = ${f.memberId ?? null})
          and (${f.groupId ?? null}::text is null or t.group_id = ${f.groupId ?? null})
          and (${f.app ?? null}::text is null or t.app = ${f.app ?? null})
          and (${f.environment ?? null}::text is null or t.environment = ${f.environment ?? null})
          and (${f.model ?? null}::text is null or t.model = ${f.model ?? null})
          and (${code}::int is null or t.status = ${code})
          and (${outcome}::text is null
               or (${outcome} = 'ok' and t.status < 400 and t.error_type is null)
               or (${outcome} = 'error' and (t.status >= 400 or t.error_type is not null)))
          and (${f.from ?? null}::timestamptz is null or t.created_at >= ${f.from ?? null})
          and (${f.to ?? null}::timestamptz is null or t.created_at < ${f.to ?? null})
          ${k.where}
        ${k.order} limit ${k.limit}`;
      return k.finish(rows);
    },
  };
}
