import type { PendingQuery, Row } from 'postgres';
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
  finish<T>(rows: T[]): Page<T>;
}

/**
 * Keyset pagination, newest first, over `(created_at, id)` of a table aliased `t`: stable
 * under inserts, and one index range scan per page however deep the page is.
 */
export function keyset(sql: Sql, table: string, q: PageQuery): Keyset {
  const backwards = !q.afterId && !!q.beforeId;
  const cursor = q.afterId ?? q.beforeId ?? null;
  const where = !cursor
    ? sql``
    : backwards
      ? sql`and (t.created_at, t.id) > (select c.created_at, c.id from ${sql(table)} c where c.id = ${cursor})`
      : sql`and (t.created_at, t.id) < (select c.created_at, c.id from ${sql(table)} c where c.id = ${cursor})`;
  return {
    where,
    order: backwards ? sql`order by t.created_at asc, t.id asc` : sql`order by t.created_at desc, t.id desc`,
    limit: q.limit + 1,
    finish<T>(rows: T[]): Page<T> {
      const page = rows.slice(0, q.limit);
      return { rows: backwards ? page.reverse() : page, hasMore: rows.length > q.limit };
    },
  };
}
