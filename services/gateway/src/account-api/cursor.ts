import { z } from 'zod';
import type { Page } from '../store';

/**
 * The provider's cursor pages (`limit`, `page` in; `data`, `next_page` out), as the SDK's
 * `PageCursor` reads them: rbac_groups, service_accounts, rate_limits, spend_limits.
 */
export const cursorParams = {
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  page: z.string().min(1).optional(),
};

export function cursorQuery(q: { limit: number; page?: string | undefined }) {
  return { limit: q.limit, afterId: q.page ?? null, beforeId: null };
}

export function cursorJson<T, J>(page: Page<T>, toJson: (row: T) => J, idOf: (row: T) => string) {
  const last = page.rows.at(-1);
  return { data: page.rows.map(toJson), next_page: page.hasMore && last ? idOf(last) : null };
}

/** A whole list cut into cursor pages by position (lists small enough to build in memory). */
export function pageOf<T>(
  all: readonly T[],
  q: { limit: number; page?: string | undefined },
  idOf: (row: T) => string,
) {
  const from = q.page ? all.findIndex((r) => idOf(r) === q.page) + 1 : 0;
  const rows = all.slice(from, from + q.limit);
  return { rows, hasMore: from + q.limit < all.length };
}
