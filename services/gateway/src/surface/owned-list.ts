import { FILES_BETA, namesBeta, SKILLS_BETA } from '@keygate/protocol';
import { GatewayError } from '../lib/errors';
import type { ForwardCall, UpstreamAttempt } from '../proxy/forward';
import type { ListedObject, ObjectKind } from './object-queries';
import { relay, requestVia } from './exchange';
import { attemptOf, homeAt } from './object-home';
import { isObjectId } from './ownership';
import type { SurfaceDeps } from './files-routes';

/**
 * Reads one object of the page where it lives: its JSON, null when it is no longer there (then
 * it is forgotten), undefined when it cannot be read now (its upstream removed: left out, kept).
 */
type Fetch = (o: ListedObject) => Promise<Record<string, unknown> | null | undefined>;

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
 * table of who made what, not the provider's page filtered: full pages of the caller's objects
 * (`everyone`: the account's, for an admin), newest first, each read where it lives as it is now. Paged as the provider pages its
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
  everyone = false,
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
  const owner = everyone ? null : { memberId: key.memberId, keyId: key.id };
  const data: Record<string, unknown>[] = [];
  let more = false;
  let cursorBefore = beforeId;
  // One more id than asked tells whether there are more; ids the provider lost are skipped.
  for (;;) {
    const want = limit - data.length + 1;
    // A test key's list is of what test keys made (in the emulator); a live key's, of the rest.
    const rows = await d.objects.ownedPage(
      key.accountId,
      kind,
      owner,
      { afterId: beforeId ? null : afterId, beforeId: cursorBefore, limit: want },
      key.kind !== 'test',
    );
    const objects = await Promise.all(rows.map((row) => fetchOne(row)));
    const kept: Record<string, unknown>[] = [];
    for (const [i, o] of objects.entries()) {
      if (o) kept.push(shown(o));
      else if (o === null) await d.objects.forget(key.accountId, rows[i]!.id);
    }
    if (beforeId) {
      // Newer objects come nearest first from the table's point of view: they go in front.
      data.unshift(...kept);
      cursorBefore = rows[0]?.id ?? cursorBefore;
    } else {
      data.push(...kept);
      afterId = rows[rows.length - 1]?.id ?? afterId;
    }
    if (data.length > limit) {
      more = true;
      if (beforeId) data.splice(0, data.length - limit);
      else data.length = limit;
      break;
    }
    if (rows.length < want) break;
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
 * Reads `base/{id}` where each object lives (object-home.ts: the upstream that made it alone,
 * else where the call goes), with the call's version headers.
 */
export function providerReader(call: ForwardCall, d: SurfaceDeps, base: string): Fetch {
  const version = String(call.req.headers['anthropic-version'] ?? '2023-06-01');
  const beta = call.req.headers['anthropic-beta'];
  const headers = {
    'anthropic-version': version,
    ...(beta ? { 'anthropic-beta': String(beta) } : {}),
    accept: 'application/json',
  };
  const own = attemptOf(call.target, d.proxy.dispatcher);
  // One look-up per upstream a page names, not per object.
  const homes = new Map<string | null, Promise<UpstreamAttempt | undefined>>();
  const homeOf = (upstreamId: string | null) => {
    let home = homes.get(upstreamId);
    if (!home) {
      home = homeAt(call.principal, d.proxy, upstreamId).then((h) =>
        h === null ? own : 'gone' in h ? undefined : attemptOf(h.target, d.proxy.dispatcher),
      );
      homes.set(upstreamId, home);
    }
    return home;
  };
  return async ({ id, upstreamId }) => {
    const home = await homeOf(upstreamId);
    if (!home) return undefined;
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
