import type { CallRecord } from '../lib/call-record';
import type { ObjectKind } from '../pipeline/body-rules';
import type { Sql } from '../store/database';

export type { ObjectKind };

/** Who made a provider object through Keygate. */
export interface ObjectOwner {
  id: string;
  kind: ObjectKind;
  keyId: string | null;
  memberId: string | null;
  groupId: string | null;
  /** The account upstream it was made on (`ups_…`); null for the provider key (or a test key's emulator). */
  upstreamId?: string | null;
  /** Made with a live key (false: a test key, in Keygate's emulator). */
  live: boolean;
}

/** An object of a list: its id and where it lives (as ObjectOwner's `upstreamId`). */
export interface ListedObject {
  id: string;
  upstreamId: string | null;
}

/** A batch Keygate follows, attributed like the calls its results become. */
export interface OpenBatch
  extends Pick<CallRecord, 'accountId' | 'keyId' | 'memberId' | 'app' | 'environment' | 'groupId'> {
  id: string;
  live: boolean;
  requestCount: number;
  backoffMs: number;
  createdAt: Date;
  /** What the batch holds on hard-capped spend counters until its results are recorded (admission/). */
  hold: BatchHold | null;
  /** The account upstream that created it, where it is read (`ups_…`); null for the provider key. */
  upstreamId: string | null;
}

/** A batch's hold on spend counters: its id and the counters held, as admission answered them. */
export interface BatchHold {
  id: string;
  counters: { scopeId: string; label: string }[];
}

const OPEN_BATCH = `id, account_id as "accountId", key_id as "keyId", member_id as "memberId", app, environment,
  group_id as "groupId", live, request_count as "requestCount", backoff_ms as "backoffMs",
  created_at as "createdAt", upstream_id as "upstreamId",
  case when hold_id is null then null
       else jsonb_build_object('id', hold_id, 'counters', hold_counters) end as hold`;

/** Provider objects (files, batches, …) and who owns them; the batches Keygate follows. */
export function objectQueries(sql: Sql) {
  return {
    async claim(accountId: string, o: ObjectOwner): Promise<void> {
      await sql`
        insert into provider_objects (account_id, id, kind, key_id, member_id, group_id, upstream_id, live)
        values (${accountId}, ${o.id}, ${o.kind}, ${o.keyId}, ${o.memberId}, ${o.groupId}, ${o.upstreamId ?? null},
                ${o.live})
        on conflict (account_id, id) do nothing`;
    },
    /** The owners of these ids in the account (ids Keygate never saw are absent). */
    async owners(accountId: string, ids: string[]): Promise<Map<string, ObjectOwner>> {
      if (ids.length === 0) return new Map();
      const rows = await sql<ObjectOwner[]>`
        select id, kind, key_id as "keyId", member_id as "memberId", group_id as "groupId",
               upstream_id as "upstreamId", live
        from provider_objects
        where account_id = ${accountId} and id = any(${ids}::text[]) and deleted_at is null`;
      return new Map(rows.map((r) => [r.id, r]));
    },
    /**
     * One page of an owner's objects of a kind, newest first, as the provider pages its lists:
     * `afterId` takes the older ones after it, `beforeId` the newer ones just before it. A member
     * owns what their keys made; a key of no member what it made itself; no owner: the account's.
     * `live`: the objects live keys made, or (false) those test keys made in the emulator.
     */
    async ownedPage(
      accountId: string,
      kind: ObjectKind,
      owner: { memberId: string | null; keyId: string } | null,
      page: { afterId: string | null; beforeId: string | null; limit: number },
      live = true,
    ): Promise<ListedObject[]> {
      const whose = !owner
        ? sql`true`
        : owner.memberId
          ? sql`member_id = ${owner.memberId}`
          : sql`member_id is null and key_id = ${owner.keyId}`;
      const mine = sql`live = ${live} and ${whose}`;
      const at = (id: string) =>
        sql`(select created_at, id from provider_objects where account_id = ${accountId} and id = ${id})`;
      const rows = page.beforeId
        ? await sql<ListedObject[]>`
            select id, upstream_id as "upstreamId" from (
              select id, upstream_id, created_at from provider_objects
              where account_id = ${accountId} and kind = ${kind} and deleted_at is null and ${mine}
                and (created_at, id) > ${at(page.beforeId)}
              order by created_at, id limit ${page.limit}) newer
            order by created_at desc, id desc`
        : await sql<ListedObject[]>`
            select id, upstream_id as "upstreamId" from provider_objects
            where account_id = ${accountId} and kind = ${kind} and deleted_at is null and ${mine}
              ${page.afterId ? sql`and (created_at, id) < ${at(page.afterId)}` : sql``}
            order by created_at desc, id desc limit ${page.limit}`;
      return rows;
    },
    async forget(accountId: string, id: string): Promise<void> {
      await sql`update provider_objects set deleted_at = now() where account_id = ${accountId} and id = ${id}`;
    },

    async followBatch(
      b: Omit<OpenBatch, 'backoffMs' | 'createdAt'> & { reservedCents: number },
    ): Promise<void> {
      await sql`
        insert into batches (id, account_id, key_id, member_id, app, environment, group_id, live, request_count,
                             reserved_cents, hold_id, hold_counters, upstream_id)
        values (${b.id}, ${b.accountId}, ${b.keyId}, ${b.memberId}, ${b.app}, ${b.environment}, ${b.groupId},
                ${b.live}, ${b.requestCount}, ${b.reservedCents}, ${b.hold?.id ?? null},
                ${b.hold ? sql.json(b.hold.counters) : null}, ${b.upstreamId})
        on conflict (id) do nothing`;
    },
    /**
     * Takes the batches due for a check and pushes their next check past the lease, so another
     * instance does not take them at the same time; `rescheduled` or `recorded` settles them.
     */
    async dueBatches(limit: number, leaseMs: number): Promise<OpenBatch[]> {
      return sql<OpenBatch[]>`
        update batches set next_check_at = now() + make_interval(secs => ${leaseMs / 1000})
        where id in (
          select id from batches where status <> 'recorded' and next_check_at <= now()
          order by next_check_at limit ${limit} for update skip locked)
        returning ${sql.unsafe(OPEN_BATCH)}`;
    },
    /** One batch not yet recorded, taken for a check now (its lease pushed like `dueBatches`). */
    async takeBatch(id: string, leaseMs: number): Promise<OpenBatch | null> {
      const [row] = await sql<OpenBatch[]>`
        update batches set next_check_at = now() + make_interval(secs => ${leaseMs / 1000})
        where id = ${id} and status <> 'recorded'
        returning ${sql.unsafe(OPEN_BATCH)}`;
      return row ?? null;
    },
    /** Gives back the lease of batches taken but not checked (a follower that stops): due now again. */
    async releaseBatches(ids: string[]): Promise<void> {
      if (ids.length > 0) await sql`update batches set next_check_at = now() where id = any(${ids}::text[])`;
    },
    async rescheduleBatch(id: string, backoffMs: number): Promise<void> {
      await sql`
        update batches set backoff_ms = ${backoffMs}, next_check_at = now() + make_interval(secs => ${backoffMs / 1000})
        where id = ${id}`;
    },
    async batchRecorded(id: string, results: number): Promise<void> {
      await sql`
        update batches set status = 'recorded', results_recorded = ${results}, ended_at = coalesce(ended_at, now())
        where id = ${id}`;
    },
    /** The usage totals of a session already recorded (null: none yet). */
    async sessionTotals(accountId: string, sessionId: string): Promise<Record<string, number> | null> {
      const [row] = await sql<{ totals: Record<string, number> }[]>`
        select totals from session_usage where account_id = ${accountId} and session_id = ${sessionId}`;
      return row?.totals ?? null;
    },
    /**
     * Moves a session's recorded totals from `from` (null: none yet) to `to`; false when another
     * observer moved them first (then it records the growth, not this one).
     */
    async advanceSessionTotals(
      accountId: string,
      sessionId: string,
      from: Record<string, number> | null,
      to: Record<string, number>,
    ): Promise<boolean> {
      const rows = from
        ? await sql`
            update session_usage set totals = ${sql.json(to)}, updated_at = now()
            where account_id = ${accountId} and session_id = ${sessionId} and totals = ${sql.json(from)}
            returning 1`
        : await sql`
            insert into session_usage (account_id, session_id, totals) values (${accountId}, ${sessionId}, ${sql.json(to)})
            on conflict do nothing returning 1`;
      return rows.length === 1;
    },
    /**
     * Where an object Keygate made lives: the account upstream that made it (`ups_…`), null for
     * the provider key; undefined for an object Keygate did not make (made elsewhere).
     */
    async upstreamOf(accountId: string, id: string): Promise<string | null | undefined> {
      const [row] = await sql<{ upstreamId: string | null }[]>`
        select upstream_id as "upstreamId" from provider_objects where account_id = ${accountId} and id = ${id}`;
      return row ? row.upstreamId : undefined;
    },
    async batchStatus(id: string): Promise<{ status: string; resultsRecorded: number } | null> {
      const [row] = await sql<{ status: string; resultsRecorded: number }[]>`
        select status, results_recorded as "resultsRecorded" from batches where id = ${id}`;
      return row ?? null;
    },
  };
}
