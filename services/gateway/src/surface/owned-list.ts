import { FILES_BETA, namesBeta, SKILLS_BETA } from '@keygate/protocol';
import { GatewayError } from '../lib/errors';
import type { ForwardCall, UpstreamAttempt } from '../proxy/forward';
import { providerKeyAttempt } from '../upstreams/request';
import type { ObjectKind } from './object-queries';
import { relay, requestVia } from './exchange';
import { isObjectId } from './ownership';
import type { SurfaceDeps } from './files-routes';

/**
 * Reads one object of the page from the provider: its JSON, null when the provider no longer has
 * it (then it is forgotten), undefined when it cannot be read now (left out, kept).
 */
type Fetch = (id: string) => Promise<Record<string, unknown> | null | undefined>;

/**
 * Where one object of a list is read: an upstream alone, `'unreadable'` to leave it out (a batch
 * whose upstream was removed), or null for where the call itself goes.
 */
export type ObjectHome = (id: string) => Promise<UpstreamAttempt | 'unreadable' | null>;

const MAX_LIMIT = 1000;

/** Families that went GA: without this beta value their lists answer in the GA shape (protocol's beta-forms.ts). */
const SHAPE_BETA: Partial<Record<ObjectKind, string>> = { file: FILES_BETA, skill: SKILLS_BETA };

function cursor(query: URLSearchParams, name: string): string | null {
  const value = query.get(name);
  if (value === null || value === '') return null;
  if (!isObjectId(value))
    throw new GatewayError(
      'invalid_request_error',
      `${name}: not an object id (visible ASCII, at most 256 characters).`,
    );
  return value;
}

/**
 * A member's list (files, batches, skills, sessions, agents, environments) from Keygate's own
 * table of who made what, not the provider's page filtered: full pages of the caller's objects,
 * newest first, each read from the provider as it is now. Paged as the provider pages its
 * lists (`limit` 1 to 1,000, default 20; `after_id` for older, `before_id` for newer; `has_more`,
 * `first_id`, `last_id`), with `next_page` and `page` too, the cursor the official SDKs' newer
 * list methods follow (TypeScript SDK 1.11's `PageCursor`, read 2026-11-25). Files and skills
 * called without their beta value answer the GA page, `{data, next_page}` (read 2026-11-29). An
 * object the provider no longer has (deleted outside Keygate) is forgotten and the page filled
 * past it.
 */
export async function ownedList(
  call: ForwardCall,
  d: SurfaceDeps,
  kind: ObjectKind,
  fetchOne: Fetch,
  shown: (o: Record<string, unknown>) => Record<string, unknown> = (o) => o,
): Promise<void> {
  const query = new URL(call.req.url ?? '/', 'http://keygate.invalid').searchParams;
  const limit = Number(query.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new GatewayError('invalid_request_error', `limit: must be an integer from 1 to ${MAX_LIMIT}.`);
  const beforeId = cursor(query, 'before_id');
  let afterId = cursor(query, 'after_id') ?? cursor(query, 'page');
  if (beforeId && afterId)
    throw new GatewayError('invalid_request_error', 'Pass either after_id or before_id, not both.');
  const { key } = call.principal;
  const owner = { memberId: key.memberId, keyId: key.id };
  const data: Record<string, unknown>[] = [];
  let more = false;
  let cursorBefore = beforeId;
  // One more id than asked tells whether there are more; ids the provider lost are skipped.
  for (;;) {
    const want = limit - data.length + 1;
    const ids = await d.objects.ownedPage(key.accountId, kind, owner, {
      afterId: beforeId ? null : afterId,
      beforeId: cursorBefore,
      limit: want,
    });
    const objects = await Promise.all(ids.map((id) => fetchOne(id)));
    const kept: Record<string, unknown>[] = [];
    for (const [i, o] of objects.entries()) {
      if (o) kept.push(shown(o));
      else if (o === null) await d.objects.forget(key.accountId, ids[i]!);
    }
    if (beforeId) {
      // Newer objects come nearest first from the table's point of view: they go in front.
      data.unshift(...kept);
      cursorBefore = ids[0] ?? cursorBefore;
    } else {
      data.push(...kept);
      afterId = ids[ids.length - 1] ?? afterId;
    }
    if (data.length > limit) {
      more = true;
      if (beforeId) data.splice(0, data.length - limit);
      else data.length = limit;
      break;
    }
    if (ids.length < want) break;
  }
  const first = (data[0]?.id as string | undefined) ?? null;
  const last = (data[data.length - 1]?.id as string | undefined) ?? null;
  const nextPage = more && !beforeId ? last : null;
  const beta = SHAPE_BETA[kind];
  const ga = beta !== undefined && !namesBeta(call.req.headers['anthropic-beta'], beta);
  const body = Buffer.from(
    JSON.stringify(
      ga
        ? { data, next_page: nextPage }
        : {
            data,
            has_more: more,
            first_id: first,
            last_id: last,
            next_page: nextPage,
            prev_page: more && beforeId ? first : null,
          },
    ),
  );
  relay(call, d.proxy, {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body,
    upstreamRequestId: null,
  });
}

/**
 * Reads `path` from where the call goes (the first of the account's upstreams for it, else the
 * provider key), or from where `homeOf` says the object lives, with the call's version headers.
 */
export function providerReader(call: ForwardCall, d: SurfaceDeps, base: string, homeOf?: ObjectHome): Fetch {
  const version = String(call.req.headers['anthropic-version'] ?? '2023-06-01');
  const beta = call.req.headers['anthropic-beta'];
  const headers = {
    'anthropic-version': version,
    ...(beta ? { 'anthropic-beta': String(beta) } : {}),
    accept: 'application/json',
  };
  const { target } = call;
  const own = target.via ?? providerKeyAttempt(target.baseUrl, target.apiKey, d.proxy.dispatcher, null);
  return async (id) => {
    const home = (await homeOf?.(id)) ?? own;
    if (home === 'unreadable') return undefined;
    const path = `${base}/${encodeURIComponent(id)}`;
    let res: Awaited<ReturnType<typeof requestVia>>;
    try {
      res = await requestVia(
        home,
        { req: { headers, method: 'GET' }, path, body: null, model: null },
        d.proxy.timeoutMs,
      );
    } catch {
      throw new GatewayError(
        'api_error',
        'Could not reach the provider. The request was not processed; it is safe to retry.',
        { status: 502, headers: { 'x-should-retry': 'true' } },
      );
    }
    const text = await res.body.text();
    if (res.statusCode === 404) return null;
    if (res.statusCode !== 200)
      throw new GatewayError(
        'api_error',
        `The provider answered ${res.statusCode} reading ${id} for this list.`,
        {
          status: 502,
        },
      );
    return JSON.parse(text) as Record<string, unknown>;
  };
}
