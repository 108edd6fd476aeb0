import type { MiddlewareHandler } from 'hono';

/**
 * The organization API answers in the shape of the `anthropic-version` the client sent. The
 * provider serves two versions at once: 2023-06-01 and 2026-10-21, which "renames several Admin
 * API and Enterprise Analytics API fields" (platform.claude.com/docs/en/api/versioning and
 * /docs/en/api/migration-2026-10-21, read 2026-11-29). Keygate's serializers (serialize.ts and
 * the routes' own *Json functions) write the 2023-06-01 shape; this file is the one place that
 * turns it into a later version's, by the `type` of each object an answer carries.
 *
 * What each version changes goes in RENAMED. As of 2026-11-29 it is empty: neither the pages
 * above as stored for reading, nor docs/anthropic-protocol.md, nor the official TypeScript SDK's
 * types (0.122, which sends 2023-06-01, against 1.11, which sends 2026-10-21) name a field of a
 * shape Keygate serves that 2026-10-21 renames. The SDKs' one difference in those shapes is the
 * API key's `workspace_id`, typed by 0.122 and gone in 1.11 (its `scope` carries the workspace);
 * Keygate's keys have no workspace and never sent it. Add a version's renames here, with their
 * source, and every route of the organization API answers them.
 */
export const API_VERSIONS = ['2023-06-01', '2026-10-21'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

/** Old name to new name, per object `type` (`api_key`, `user`, `invite`, a report's row type…). */
export type Renames = Readonly<Record<string, Readonly<Record<string, string>>>>;

export const RENAMED: Readonly<Record<ApiVersion, Renames>> = {
  '2023-06-01': {},
  '2026-10-21': {},
};

/** The version whose shapes answer a request: dates from 2026-10-21 on take its shapes (ISO dates compare as strings). */
export function versionOf(header: string | undefined): ApiVersion {
  return header !== undefined && header >= '2026-10-21' ? '2026-10-21' : '2023-06-01';
}

/**
 * `value` in the shape `renames` describe: each object whose `type` names renames has those keys
 * renamed, in place of the old, keeping their order; lists (`data`), nested objects and arrays
 * are walked. Values are not changed.
 */
export function reshape(value: unknown, renames: Renames): unknown {
  if (Array.isArray(value)) return value.map((v) => reshape(v, renames));
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  const names = typeof o.type === 'string' ? renames[o.type] : undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[names?.[k] ?? k] = reshape(v, renames);
  return out;
}

/** New name to old, from every object type's renames: how a later version's request fields are read. */
export function inputNames(renames: Renames): Record<string, string> {
  const out: Record<string, string> = {};
  for (const names of Object.values(renames)) for (const [old, now] of Object.entries(names)) out[now] = old;
  return out;
}

/**
 * Middleware: every JSON answer of the routes below it in the shape of the client's version, and
 * the version's new names in query parameters and bodies read as the old (lib/operation.ts reads
 * `inputNames` before it validates). It wraps `c.json`, so the routes keep one serializer each
 * and no route asks for the version.
 */
export function versionedShapes(table: Readonly<Record<ApiVersion, Renames>> = RENAMED): MiddlewareHandler {
  return async function versionedShapes(c, next) {
    const renames = table[versionOf(c.req.header('anthropic-version'))];
    if (Object.keys(renames).length > 0) {
      c.set('inputNames', inputNames(renames));
      const json = c.json.bind(c) as (...args: unknown[]) => Response;
      (c as { json: unknown }).json = (object: unknown, ...rest: unknown[]) =>
        json(reshape(object, renames), ...rest);
    }
    await next();
  };
}
