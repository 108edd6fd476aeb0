import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/accounts/service';
import { randomBase62 } from '../src/lib/ids';
import { endpointKey, type Endpoint, type PathRef } from '../src/pipeline/endpoint-row';
import { ENDPOINTS } from '../src/pipeline/endpoints';
import type { ObjectKind } from '../src/surface/object-queries';
import { dashboardSession } from './dashboard-http';
import {
  type Caller,
  concrete,
  contentType,
  credentialHeaders,
  encode,
  FOREIGN_MODEL,
  NUL,
  nulBody,
  place,
} from './kit/endpoint-cases';
import { answerShape, type Answer, type Case, runCases } from './kit/endpoint-answers';
import { startSurfaceStack, type SurfaceStack } from './surface-kit';
import { validBody } from './kit/valid-bodies';
import { privatePostgres, type PrivatePostgres } from './kit/private-postgres';

// Cases generated from the endpoint table (src/pipeline/endpoints.ts), run against one gateway
// on loopback (the proxy reads bodies from Node's request, so app.request cannot stand in):
// a NUL in every string field and parameter, another member's and another account's id in
// every reference field, a model outside the caller's policy in every model field. Every
// answer is in the row's own shape and none is a 500; every answered call of a row that
// records calls is in the call log. Bounds and floods: endpoint-floods.test.ts.

const KINDS: ObjectKind[] = ['file', 'batch', 'skill', 'session', 'agent', 'environment'];
let s: SurfaceStack;
let caller: Caller;
/** Ids of the caller's (made up for account objects: a write never touches a real one), another member's, another account's. */
let own: (ref: PathRef) => string;
let member: (ref: PathRef) => string | null;
let account: (ref: PathRef) => string;

let cluster: PrivatePostgres;
beforeAll(async () => {
  // A cluster of its own, so the last case can stop it.
  cluster = await privatePostgres();
  s = await startSurfaceStack({ DATABASE_URL: cluster.url });
  const base = s.stack.gateway.url;
  const admin = (path: string, body: unknown, key = s.adminKey) =>
    fetch(`${base}/v1/organizations${path}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
  // Alice may use haiku models only: any other model named anywhere is refused.
  const policy = await admin('/model_policies', {
    scope: { type: 'user', user_id: s.alice.memberId },
    allowed_models: ['claude-haiku-*'],
    max_tokens: null,
  });
  expect(policy).toMatchObject({ status: 200 });
  const scim = await admin('/scim_tokens', {});
  const other = await s.stack.seedAccount();
  const otherKey = await createKey(s.stack.deps, {
    accountId: other.id,
    kind: 'live',
    memberId: other.adminMemberId,
    app: null,
    environment: null,
  });
  const otherGroup = await admin('/rbac_groups', { name: 'Theirs' }, other.adminKey);
  // Operator rows act on an account of their own: a suspension or a plan change reaches no other row.
  const operated = await s.stack.seedAccount();
  const session = await dashboardSession(base, s.adminKey);
  caller = {
    appKey: s.alice.key,
    adminKey: s.adminKey,
    operatorToken: s.stack.config.operatorToken!,
    scimToken: scim.body.token,
    session: { cookie: session.cookie, csrf: session.csrf },
    accountId: operated.id,
    appAccountId: s.stack.account.id,
  };
  const objects = s.stack.gateway.store.objects;
  const ids = new Map<string, string>();
  for (const kind of KINDS)
    for (const [whose, accountId, keyId, memberId] of [
      ['own', s.stack.account.id, s.alice.keyId, s.alice.memberId],
      ['member', s.stack.account.id, s.bob.keyId, s.bob.memberId],
      ['account', other.id, otherKey.key.id, other.adminMemberId],
    ] as const) {
      const id = `${kind}_${whose}_${randomBase62(12)}`;
      await objects.claim(accountId, { id, kind, keyId, memberId, groupId: null, live: true });
      ids.set(`${whose} ${kind}`, id);
    }
  own = (ref) => ids.get(`own ${ref.kind}`) ?? `${ref.kind}_${randomBase62(16)}`;
  member = (ref) => (ref.owner === 'member' ? ids.get(`member ${ref.kind}`)! : null);
  const theirs: Record<string, string> = {
    user: other.adminMemberId,
    api_key: other.adminKeyId,
    key: other.adminKeyId,
    rbac_group: otherGroup.body.id,
  };
  account = (ref) => ids.get(`account ${ref.kind}`) ?? theirs[ref.kind] ?? `${ref.kind}_${randomBase62(16)}`;
}, 120_000);
afterAll(async () => {
  await s?.stack.close();
  await cluster?.remove();
});

const withBody = (row: Endpoint) => row.body.kind !== 'none';
const reads = (row: Endpoint) => row.method === 'GET' || row.method === 'HEAD';
// Signing out ends the session the dashboard rows use: it runs last.
const rows = [...ENDPOINTS].sort(
  (a, b) => Number(a.path.endsWith('/sign-out')) - Number(b.path.endsWith('/sign-out')),
);

/** The row sent with `body` (fields) and the path filled by `ids`. */
function request(
  row: Endpoint,
  fields: Record<string, unknown> | null,
  ids = own,
  nul = false,
): Case['sent'] {
  const base = s.stack.gateway.url;
  const headers = credentialHeaders(row, caller, base);
  const method = row.method === 'ALL' ? 'POST' : row.method;
  let path = concrete(row, caller, ids, nul);
  if (nul && reads(row)) path += `?limit=${encodeURIComponent(NUL)}`;
  if (!fields || !withBody(row)) return { method, path, headers };
  return {
    method,
    path,
    headers: { ...headers, 'content-type': contentType(row) },
    body: encode(row, caller, fields),
  };
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const row of rows) {
    if (withBody(row))
      out.push({
        row,
        name: 'NUL in every string field',
        sent: request(row, { ...validBody(row.path), ...nulBody(row) }),
      });
    if (/:[a-z_]+|\*/.test(row.path) || reads(row))
      out.push({ row, name: 'NUL in every path and query parameter', sent: request(row, {}, own, true) });
    const valid = () => validBody(row.path) ?? {};
    for (const ref of row.pathRefs) {
      const theirs = member(ref);
      const swap = (id: string) => (r: PathRef) => (r === ref ? id : own(r));
      const sent = (id: string) => request(row, valid(), swap(id));
      if (theirs)
        out.push({
          row,
          name: `another member's ${ref.kind} in :${ref.param}`,
          sent: sent(theirs),
          expect: 404,
        });
      out.push({
        row,
        name: `another account's ${ref.kind} in :${ref.param}`,
        sent: sent(account(ref)),
        expect: 404,
      });
    }
    for (const ref of row.bodyRefs) {
      const owner = row.credentials.includes('app-key') ? 'member' : 'account';
      const path = { param: ref.at, kind: ref.kind, owner } as PathRef;
      const body = (id: string) => {
        const fields = place(ref.at, id, valid());
        // A scope names its object by the field its type selects (`{type: 'user', user_id}`).
        const scope = /^scope\.(\w+)_id$/.exec(ref.at);
        if (scope) (fields.scope as Record<string, unknown>).type = scope[1];
        return fields;
      };
      const theirs = member(path);
      if (theirs)
        out.push({
          row,
          name: `another member's ${ref.kind} in ${ref.at}`,
          sent: request(row, body(theirs)),
          expect: 404,
        });
      out.push({
        row,
        name: `another account's ${ref.kind} in ${ref.at}`,
        sent: request(row, body(account(path))),
        expect: 404,
      });
    }
    for (const field of row.models)
      out.push({
        row,
        name: `a model outside the policy in ${field}`,
        sent: request(row, place(field, FOREIGN_MODEL)),
        expect: 400,
      });
  }
  return out;
}

describe('guarantees generated from the endpoint table', () => {
  it('every row: NULs, foreign references and foreign models answered in its own shape, never a 500, and recorded', async () => {
    const all = cases();
    const started = performance.now();
    const answers = await runCases(s.stack.gateway.url, all, 6);
    const perRow = new Map<string, number>();
    for (const c of all) perRow.set(endpointKey(c.row), (perRow.get(endpointKey(c.row)) ?? 0) + 1);
    console.log(
      `endpoint guarantees: ${all.length} cases over ${perRow.size} of ${ENDPOINTS.length} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    // A row without a case would pass unseen: every row has at least one (its path or its body).
    expect(ENDPOINTS.map(endpointKey).filter((key) => !perRow.has(key))).toEqual([]);
    const wrong = answers.flatMap((a: Answer) => answerShape(a));
    expect(wrong).toEqual([]);
    // Every answered call of a row that records calls is in the call log, under its request id.
    await s.stack.gateway.writer.flush();
    const recorded = answers
      .filter((a) => a.row.recording === 'call-log' && a.requestId)
      .map((a) => a.requestId!);
    const rowsFound = await s.stack.gateway.store.db.sql<
      { id: string }[]
    >`select id from calls where id = any(${recorded})`;
    const found = new Set(rowsFound.map((r) => r.id));
    const unrecorded = answers
      .filter((a) => a.row.recording === 'call-log' && a.requestId && !found.has(a.requestId))
      .map(
        (a) => `${endpointKey(a.row)} (${a.name}): ${a.status} not in the call log: ${a.text.slice(0, 200)}`,
      );
    expect(unrecorded).toEqual([]);
  }, 300_000);

  it('every row with the database stopped: answered in its own shape, 503 where it needs the database, never a 500', async () => {
    // Every credential used once before, as clients would have: keys seen are served from memory.
    await cluster.stop('fast');
    const all = rows.map((row) => ({
      row,
      name: 'database stopped',
      sent: request(row, validBody(row.path) ?? {}),
    }));
    const started = performance.now();
    const answers = await runCases(s.stack.gateway.url, all, 6);
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    console.log(
      `database stopped: ${answers.length} rows in ${((performance.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(answers.flatMap((a: Answer) => answerShape(a))).toEqual([]);
  }, 300_000);
});
