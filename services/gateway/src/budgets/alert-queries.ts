import { newId } from '../lib/ids';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export const ALERTS_CHANNEL = 'keygate_alerts';

export interface WebhookEndpointRecord {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  events: string[];
  status: 'active' | 'disabled';
  errorRateThreshold: number | null;
  errorRateWindowSeconds: number | null;
  errorRateMinCalls: number;
  createdBy: string | null;
  createdAt: Date;
}

export type NewWebhookEndpoint = Omit<WebhookEndpointRecord, 'createdAt'> & { secretSealed: string };
export type WebhookEndpointPatch = Partial<
  Pick<
    WebhookEndpointRecord,
    | 'url'
    | 'description'
    | 'events'
    | 'status'
    | 'errorRateThreshold'
    | 'errorRateWindowSeconds'
    | 'errorRateMinCalls'
  >
>;

/**
 * An alert to deliver: any part of the gateway (billing too) inserts one with
 * `insertAlertEvent` inside the transaction that caused it.
 */
export interface NewAlertEvent {
  accountId: string;
  type: string;
  data: Record<string, unknown>;
  /** Only this endpoint receives it (null: every endpoint subscribed to `type`). */
  endpointId?: string | null;
  /** A second event with the same key is dropped. */
  dedupKey?: string | null;
}

/** A delivery claimed by a worker, with what it needs to send it. */
export interface ClaimedDelivery {
  seq: string;
  attempts: number;
  endpointId: string;
  url: string;
  secretSealed: string;
  eventId: string;
  type: string;
  accountId: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date;
  deliveredAt: Date | null;
  createdAt: Date;
}

const endpointCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.url, t.description, t.events, t.status,
  t.error_rate_threshold::float8 as "errorRateThreshold", t.error_rate_window_seconds as "errorRateWindowSeconds",
  t.error_rate_min_calls as "errorRateMinCalls", t.created_by as "createdBy", t.created_at as "createdAt"`;

/** Queues an alert event (fanned out to endpoints by a trigger); returns its id, or null when `dedupKey` was seen. */
export async function insertAlertEvent(t: Sql, e: NewAlertEvent): Promise<string | null> {
  const [row] = await t<{ id: string }[]>`
    insert into alert_events (id, account_id, type, data, endpoint_id, dedup_key)
    values (${newId('evt')}, ${e.accountId}, ${e.type}, ${e.data as never}, ${e.endpointId ?? null}, ${e.dedupKey ?? null})
    on conflict (dedup_key) do nothing returning id`;
  return row?.id ?? null;
}

/** The account already has as many webhook endpoints as it may (KEYGATE_WEBHOOK_MAX_ENDPOINTS). */
export class EndpointLimitError extends Error {
  override name = 'EndpointLimitError';
  constructor(readonly max: number) {
    super(`at most ${max} webhook endpoints per account`);
  }
}

export function alertQueries(sql: Sql) {
  const audited = <T>(accountId: string, work: (t: Sql) => Promise<T | undefined>, audit: AuditEntry) =>
    inTransaction(sql, async (t) => {
      const row = await work(t);
      if (row === undefined) return null;
      await writeAudit(t, accountId, audit);
      return row;
    });

  return {
    emit: (e: NewAlertEvent) => insertAlertEvent(sql, e),

    async createEndpoint(
      e: NewWebhookEndpoint,
      audit: AuditEntry,
      maxEndpoints = Number.POSITIVE_INFINITY,
    ): Promise<WebhookEndpointRecord> {
      const row = await audited(
        e.accountId,
        async (t) => {
          // The account row's lock makes the count and the insert one step across instances.
          await t`select 1 from accounts where id = ${e.accountId} for update`;
          const [n] = await t<{ n: number }[]>`
            select count(*)::int as n from webhook_endpoints where account_id = ${e.accountId} and deleted_at is null`;
          if (n!.n >= maxEndpoints) throw new EndpointLimitError(maxEndpoints);
          const [r] = await t<WebhookEndpointRecord[]>`
          insert into webhook_endpoints as t (id, account_id, url, description, secret_sealed, events, status,
            error_rate_threshold, error_rate_window_seconds, error_rate_min_calls, created_by)
          values (${e.id}, ${e.accountId}, ${e.url}, ${e.description}, ${e.secretSealed}, ${e.events}::text[], ${e.status},
            ${e.errorRateThreshold}, ${e.errorRateWindowSeconds}, ${e.errorRateMinCalls}, ${e.createdBy})
          returning ${endpointCols(t)}`;
          return r;
        },
        audit,
      );
      return row!;
    },

    async getEndpoint(accountId: string, id: string): Promise<WebhookEndpointRecord | null> {
      const [r] = await sql<WebhookEndpointRecord[]>`
        select ${endpointCols(sql)} from webhook_endpoints t where t.account_id = ${accountId} and t.id = ${id} and t.deleted_at is null`;
      return r ?? null;
    },

    async listEndpoints(accountId: string, q: PageQuery): Promise<Page<WebhookEndpointRecord>> {
      const ks = keyset(sql, 'webhook_endpoints', accountId, q);
      const rows = await sql<WebhookEndpointRecord[]>`
        select ${endpointCols(sql)} from webhook_endpoints t
        where t.account_id = ${accountId} and t.deleted_at is null ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    async updateEndpoint(
      accountId: string,
      id: string,
      p: WebhookEndpointPatch,
      audit: AuditEntry,
    ): Promise<WebhookEndpointRecord | null> {
      const has = (f: keyof WebhookEndpointPatch) => f in p;
      return audited(
        accountId,
        async (t) => {
          const [r] = await t<WebhookEndpointRecord[]>`
          update webhook_endpoints t set
            url = coalesce(${p.url ?? null}, t.url),
            description = ${has('description') ? (p.description ?? null) : sql`t.description`},
            events = coalesce(${p.events ?? null}::text[], t.events),
            status = coalesce(${p.status ?? null}, t.status),
            error_rate_threshold = ${has('errorRateThreshold') ? (p.errorRateThreshold ?? null) : sql`t.error_rate_threshold`},
            error_rate_window_seconds = ${has('errorRateWindowSeconds') ? (p.errorRateWindowSeconds ?? null) : sql`t.error_rate_window_seconds`},
            error_rate_min_calls = coalesce(${p.errorRateMinCalls ?? null}::int, t.error_rate_min_calls)
          where t.account_id = ${accountId} and t.id = ${id} and t.deleted_at is null
          returning ${endpointCols(t)}`;
          // A disabled endpoint receives nothing more, not even what was queued before.
          if (r?.status === 'disabled')
            await t`update webhook_deliveries set status = 'failed', last_error = 'endpoint disabled' where endpoint_id = ${id} and status = 'pending'`;
          return r;
        },
        audit,
      );
    },

    /** Deletes an endpoint; what it had not received yet is marked failed. */
    async removeEndpoint(
      accountId: string,
      id: string,
      audit: AuditEntry,
    ): Promise<WebhookEndpointRecord | null> {
      return audited(
        accountId,
        async (t) => {
          const [r] = await t<WebhookEndpointRecord[]>`
          update webhook_endpoints t set deleted_at = now(), status = 'disabled'
          where t.account_id = ${accountId} and t.id = ${id} and t.deleted_at is null returning ${endpointCols(t)}`;
          if (r)
            await t`update webhook_deliveries set status = 'failed', last_error = 'endpoint deleted' where endpoint_id = ${id} and status = 'pending'`;
          return r;
        },
        audit,
      );
    },

    async deliveries(endpointId: string, limit: number): Promise<DeliveryRecord[]> {
      return sql<DeliveryRecord[]>`
        select d.seq::text as id, d.event_id as "eventId", e.type, d.status, d.attempts, d.last_status as "lastStatus",
               d.last_error as "lastError", d.next_attempt_at as "nextAttemptAt", d.delivered_at as "deliveredAt", d.created_at as "createdAt"
        from webhook_deliveries d join alert_events e on e.id = d.event_id
        where d.endpoint_id = ${endpointId} order by d.seq desc limit ${limit}`;
    },

    /**
     * Claims due deliveries for this worker: at most one per endpoint, and only the oldest
     * pending one of each (the order per endpoint is kept: a later event waits for the earlier
     * one's retries). A claim is a lease: `next_attempt_at` moves `leaseMs` ahead, so a
     * worker that dies mid-delivery leaves the row to be claimed again after it.
     */
    async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
      return inTransaction(sql, async (t) => {
        const rows = await t<{ seq: string }[]>`
          select d.seq::text from webhook_deliveries d
          where d.status = 'pending' and d.next_attempt_at <= now()
            and exists (select 1 from webhook_endpoints w where w.id = d.endpoint_id and w.status = 'active' and w.deleted_at is null)
            and d.seq = (select min(h.seq) from webhook_deliveries h where h.endpoint_id = d.endpoint_id and h.status = 'pending')
          order by d.seq
          for update of d skip locked
          limit ${limit}`;
        if (rows.length === 0) return [];
        return t<ClaimedDelivery[]>`
          update webhook_deliveries d set attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
          from alert_events e, webhook_endpoints w
          where d.seq = any(${rows.map((r) => r.seq)}::bigint[]) and e.id = d.event_id and w.id = d.endpoint_id
            and w.status = 'active' and w.deleted_at is null
          returning d.seq::text, d.attempts, d.endpoint_id as "endpointId", w.url, w.secret_sealed as "secretSealed",
                    e.id as "eventId", e.type, e.account_id as "accountId", e.data, e.created_at as "createdAt"`;
      });
    },

    async delivered(seq: string, status: number): Promise<void> {
      await sql`update webhook_deliveries set status = 'delivered', delivered_at = now(), last_status = ${status}, last_error = null where seq = ${seq}`;
    },

    /** A failed attempt: retried after `retryMs`, or marked failed once it was the last allowed. */
    async attemptFailed(
      seq: string,
      outcome: { status: number | null; error: string },
      retryMs: number,
      maxAttempts: number,
    ): Promise<void> {
      await sql`
        update webhook_deliveries set last_status = ${outcome.status}, last_error = ${outcome.error.slice(0, 500)},
          status = case when attempts >= ${maxAttempts} then 'failed' else 'pending' end,
          next_attempt_at = now() + make_interval(secs => ${retryMs / 1000})
        where seq = ${seq}`;
    },

    /** Endpoints with an error-rate alert, across accounts. */
    async errorRateWatches(): Promise<
      {
        id: string;
        accountId: string;
        threshold: number;
        windowSeconds: number;
        minCalls: number;
        alerting: boolean;
      }[]
    > {
      return sql`
        select id, account_id as "accountId", error_rate_threshold::float8 as threshold, error_rate_window_seconds as "windowSeconds",
               error_rate_min_calls as "minCalls", error_rate_alerting as alerting
        from webhook_endpoints
        where deleted_at is null and status = 'active' and error_rate_threshold is not null
          and 'error_rate.exceeded' = any(events)`;
    },

    /** Calls and errors of an account's messages calls over the last `seconds`, from the call log by index. */
    async recentErrors(accountId: string, seconds: number): Promise<{ calls: number; errors: number }> {
      const [r] = await sql<{ calls: number; errors: number }[]>`
        select count(*)::int as calls, (count(*) filter (where status >= 400 or error_type is not null))::int as errors
        from calls where account_id = ${accountId} and endpoint = 'messages' and created_at > now() - make_interval(secs => ${seconds})`;
      return r!;
    },

    /**
     * Flips an endpoint's error-rate state and, with the flip, queues `event`; true when this
     * call made the change (one instance wins).
     */
    async setErrorAlerting(id: string, alerting: boolean, event: NewAlertEvent | null): Promise<boolean> {
      return inTransaction(sql, async (t) => {
        const r =
          await t`update webhook_endpoints set error_rate_alerting = ${alerting} where id = ${id} and error_rate_alerting <> ${alerting} returning 1`;
        if (r.length > 0 && event) await insertAlertEvent(t, event);
        return r.length > 0;
      });
    },
  };
}
