import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ScimGroupRecord, ScimMember } from './scim-queries';

// Shapes from RFC 7643 (SCIM 2.0 core schema: §4.1 User, §4.2 Group, §3.1 meta) and RFC 7644
// (protocol: §3.4.2 ListResponse, §3.5.2 PatchOp, §3.12 Error), https://www.rfc-editor.org/rfc/rfc7643
// and https://www.rfc-editor.org/rfc/rfc7644 (read 2026-11-25).
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** A SCIM error (RFC 7644 §3.12): identity providers parse this shape, not the provider's. */
export class ScimError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly detail: string,
    readonly scimType?:
      | 'invalidFilter'
      | 'invalidValue'
      | 'invalidSyntax'
      | 'uniqueness'
      | 'noTarget'
      | 'mutability',
  ) {
    super(detail);
  }

  json() {
    return {
      schemas: [ERROR_SCHEMA],
      ...(this.scimType ? { scimType: this.scimType } : {}),
      detail: this.detail,
      status: String(this.status),
    };
  }
}

export function userJson(m: ScimMember, base: string, groups: { id: string; name: string }[] = []) {
  return {
    schemas: [USER_SCHEMA],
    id: m.id,
    ...(m.externalId ? { externalId: m.externalId } : {}),
    userName: m.email,
    name: { formatted: m.name },
    displayName: m.name,
    emails: [{ value: m.email, type: 'work', primary: true }],
    active: m.status === 'active',
    groups: groups.map((g) => ({ value: g.id, display: g.name, $ref: `${base}/Groups/${g.id}` })),
    meta: {
      resourceType: 'User',
      created: m.createdAt.toISOString(),
      lastModified: (m.removedAt ?? m.createdAt).toISOString(),
      location: `${base}/Users/${m.id}`,
    },
  };
}

export function groupJson(g: ScimGroupRecord, base: string) {
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    ...(g.externalId ? { externalId: g.externalId } : {}),
    displayName: g.displayName,
    members: g.memberIds.map((id) => ({ value: id, $ref: `${base}/Users/${id}`, type: 'User' })),
    meta: {
      resourceType: 'Group',
      created: g.createdAt.toISOString(),
      lastModified: g.createdAt.toISOString(),
      location: `${base}/Groups/${g.id}`,
    },
  };
}

export function listJson<T>(total: number, startIndex: number, resources: T[]) {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/** `attr eq "value"`, the one filter identity providers send to find a user or a group (RFC 7644 §3.4.2.2). */
export function eqFilter(filter: string | undefined, attr: string): string | null {
  if (!filter) return null;
  if (filter.includes('\0'))
    throw new ScimError(400, 'The filter contains a NUL character.', 'invalidFilter');
  const m = /^\s*(\w+)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$/i.exec(filter);
  if (!m || m[1]!.toLowerCase() !== attr.toLowerCase())
    throw new ScimError(400, `Only the filter '${attr} eq "…"' is supported.`, 'invalidFilter');
  return m[2]!.replace(/\\(.)/g, '$1');
}

/** PostgreSQL refuses a NUL character in text (22021): the client's value, so SCIM's 400. */
export function refusedValue(err: unknown): ScimError | null {
  if ((err as { code?: string }).code !== '22021') return null;
  return new ScimError(400, 'A value contains a character that is not allowed (NUL).', 'invalidValue');
}
