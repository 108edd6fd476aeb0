import type { PendingQuery, Row } from 'postgres';
import { GatewayError } from '../lib/errors';
import type { Sql } from './database';

/** A page request in the provider's list style: `limit` plus one of `after_id` / `before_id`. */
export interface PageQuery {
  limit: number;
  afterId?: string | null;
  beforeId?: string | null;
}

export interface Page<T> {
  rows: T[];
  hasMore: boolean;
}

type Fragment = PendingQuery<Row[]>;

export interface Keyset {
  /** `and (…)` restricting rows to the far side of the cursor; the table must be aliased `t`. */
  where: Fragment;
  order: Fragment;
  limit: number;
  /** The page of the rows fetched; throws a 400 when the cursor names no row of the list. */
  finish<T>(rows: T[]): Promise<Page<T>>;
}

/**
 * Keyset pagination, newest first, of a table aliased `t`: stable under inserts, and one index
 * range scan per page however deep the page is. The order is `(created_at, id)`, or `seq` for
 * a table whose rows carry their write order (rows written in one transaction can share a
 * timestamp, and ids are random). The cursor row is looked up within `accountId` (null: a list
 * that spans accounts), so another account's id tells nothing about that account's rows.
 */
export function keyset(
  sql: Sql,
  table: string,
  accountId: string | null,
  q: PageQuery,
  by: 'created_at' | 'seq' = 'created_at',
): Keyset {
  const backwards = !q.afterId && !!q.beforeId;
  const cursor = q.afterId ?? q.beforeId ?? null;
  const cursorRow = (columns: Fragment) => sql`
    select ${columns} from ${sql(table)} c where c.id = ${cursor} ${accountId === null ? sql`` : sql`and c.account_id = ${accountId}`}`;
  const [key, cursorKey] =
    by === 'seq' ? [sql`t.seq`, sql`c.seq`] : [sql`(t.created_at, t.id)`, sql`c.created_at, c.id`];
  const where = !cursor
    ? sql``
    : backwards
      ? sql`and ${key} > (${cursorRow(cursorKey)})`
      : sql`and ${key} < (${cursorRow(cursorKey)})`;
  const order =
    by === 'seq'
      ? backwards
        ? sql`order by t.seq asc`
        : sql`order by t.seq desc`
      : backwards
        ? sql`order by t.created_at asc, t.id asc`
        : sql`order by t.created_at desc, t.id desc`;
  return {
    where,
    order,
    limit: q.limit + 1,
    async finish<T>(rows: T[]): Promise<Page<T>> {
      // A cursor that names no row compares as null and selects nothing: not the end of the list.
      if (cursor && rows.length === 0 && (await cursorRow(sql`1`)).length === 0) {
        throw new GatewayError(
          'invalid_request_error',
          `${backwards ? 'before_id' : 'after_id'}: no such id in this list.`,
        );
      }
      const page = rows.slice(0, q.limit);
      return { rows: backwards ? page.reverse() : page, hasMore: rows.length > q.limit };
    },
  };
}
