import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../app-env';
import { GatewayError, knownError } from '../lib/errors';
import { newId } from '../lib/ids';
import { requestBody } from '../lib/request-body';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import { DuplicateMemberError, LastAdminError, SeatLimitError } from '../tenancy/member-queries';
import type { Store } from '../store';
import type { IdentityQueries } from '../identity/identity-queries';
import { RemovedByAdminError, type ScimQueries } from './scim-queries';
import { eqFilter, groupJson, listJson, refusedValue, ScimError, userJson } from './scim-json';

type ScimEnv = AppEnv & { Variables: AppEnv['Variables'] & { scimAccount: string } };

export const scimTokenHash = (token: string) => createHash('sha256').update(token).digest();

const SCIM_JSON = 'application/scim+json';
const MAX_COUNT = 200;

type Json = Record<string, any>;

async function body(c: Context): Promise<Json> {
  let b: unknown;
  try {
    b = await requestBody(c).json();
  } catch (err) {
    // Not JSON, or nested too deep: the reader's message as SCIM's invalidSyntax (a 413 keeps its status).
    if (err instanceof GatewayError && err.status === 400)
      throw new ScimError(400, err.message, 'invalidSyntax');
    throw err;
  }
  if (b && typeof b === 'object' && !Array.isArray(b)) return b as Json;
  throw new ScimError(400, 'The body must be a JSON object.', 'invalidSyntax');
}

function page(c: Context): { offset: number; count: number; startIndex: number } {
  const startIndex = Math.max(1, Number.parseInt(c.req.query('startIndex') ?? '1', 10) || 1);
  const count = Math.min(MAX_COUNT, Math.max(0, Number.parseInt(c.req.query('count') ?? '100', 10) || 0));
  return { offset: startIndex - 1, count, startIndex };
}

/** SCIM booleans as identity providers send them: true, or the strings "True"/"False". */
function bool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  return undefined;
}

/** What a User body or a PATCH's replace value says about the member. */
function userChanges(v: Json): { name?: string; email?: string; active?: boolean } {
  const out: { name?: string; email?: string; active?: boolean } = {};
  const name =
    v.displayName ?? v.name?.formatted ?? [v.name?.givenName, v.name?.familyName].filter(Boolean).join(' ');
  if (typeof name === 'string' && name.trim()) out.name = name.trim().slice(0, 200);
  if (typeof v.userName === 'string' && v.userName.includes('@')) out.email = v.userName.trim().toLowerCase();
  const active = bool(v.active);
  if (active !== undefined) out.active = active;
  return out;
}

function operations(b: Json): Json[] {
  if (!Array.isArray(b.Operations) || b.Operations.length === 0)
    throw new ScimError(400, 'A PatchOp needs Operations.', 'invalidSyntax');
  return b.Operations as Json[];
}

const memberValues = (v: unknown): string[] =>
  Array.isArray(v) ? v.map((m) => (m as Json)?.value).filter((x): x is string => typeof x === 'string') : [];

/**
 * SCIM 2.0 for identity providers that push changes (RFC 7644): `/scim/v2/Users` are the
 * account's members (`userName` is the email), `/scim/v2/Groups` set the members' groups claim.
 * `active: false` or DELETE deprovisions at once: keys and member tokens refused everywhere
 * within a second, device and dashboard sessions ended.
 */
/** SCIM's queries: its users and groups, the deprovisioning of a member, and the invites it accepts. */
export type ScimStore = Pick<Store, 'invites'> & { scim: ScimQueries; identity: IdentityQueries };

export function scimRoutes(store: ScimStore): Hono<ScimEnv> {
  const app = new Hono<ScimEnv>();
  app.onError((err, c) => {
    // The gateway's own refusals (a body over the limit, a database out of reach) keep their
    // status and headers, in SCIM's shape.
    const known = knownError(err);
    const gateway = known && (known.status < 500 || known.status === 503) ? known : null;
    const e =
      err instanceof ScimError
        ? err
        : gateway
          ? new ScimError(gateway.status as ContentfulStatusCode, gateway.message)
          : refusedValue(err);
    if (!e) c.var.logger.error('scim request failed', { error: err });
    const out = e ?? new ScimError(500, 'Internal error.');
    return c.body(JSON.stringify(out.json()), out.status, { ...gateway?.headers, 'content-type': SCIM_JSON });
  });
  app.use('*', bodyReader(BODIES.api));
  app.use('*', async function scimAuth(c, next) {
    const auth = c.req.header('authorization') ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    const account = token ? await store.scim.accountFor(scimTokenHash(token)) : null;
    if (!account) throw new ScimError(401, 'Send a SCIM token of this account as Authorization: Bearer.');
    c.set('scimAccount', account);
    await next();
    if (c.res.headers.get('content-type')?.startsWith('application/json'))
      c.res.headers.set('content-type', SCIM_JSON);
  });
  const base = (c: Context) => `${new URL(c.req.url).origin}/scim/v2`;
  /** Deprovisions, but never the account's last active admin (a SCIM error says why). */
  const deprovision = async (account: string, id: string, reason: string) => {
    try {
      await store.identity.deprovision(account, id, {
        actor: 'scim',
        action: 'member.deprovisioned',
        targetId: id,
        details: { reason },
      });
    } catch (err) {
      if (!(err instanceof LastAdminError)) throw err;
      throw new ScimError(
        400,
        "This user is the account's last active admin and cannot be deactivated: make another member admin first.",
        'mutability',
      );
    }
  };

  const user = async (c: Context<ScimEnv>, id: string) => {
    const m = await store.scim.user(c.var.scimAccount, id);
    if (!m) throw new ScimError(404, `No user '${id}'.`, 'noTarget');
    const groups = (await store.scim.groups(c.var.scimAccount, null, 0, 1000)).rows
      .filter((g) => g.memberIds.includes(id))
      .map((g) => ({ id: g.id, name: g.displayName }));
    return userJson(m, base(c), groups);
  };

  /** Applies name, email and activity; `active: false` deprovisions. */
  const change = async (c: Context<ScimEnv>, id: string, ch: ReturnType<typeof userChanges>) => {
    const account = c.var.scimAccount;
    if (!(await store.scim.user(account, id))) throw new ScimError(404, `No user '${id}'.`, 'noTarget');
    if (ch.active === false) await deprovision(account, id, 'SCIM: active=false');
    try {
      await store.scim.updateUser(
        account,
        id,
        {
          ...(ch.name ? { name: ch.name } : {}),
          ...(ch.email ? { email: ch.email } : {}),
          ...(ch.active ? { active: true as const } : {}),
        },
        'scim',
      );
    } catch (err) {
      if (err instanceof SeatLimitError)
        throw new ScimError(403, `Every seat of the ${err.planName} plan is taken.`);
      if (err instanceof RemovedByAdminError)
        throw new ScimError(
          400,
          'This user was removed by an account admin and cannot be reactivated through SCIM: an admin adds them again.',
          'mutability',
        );
      if ((err as { code?: string }).code === '23505')
        throw new ScimError(409, 'userName is taken.', 'uniqueness');
      throw err;
    }
    return c.json(await user(c, id));
  };

  app.get('/Users', async (c) => {
    const p = page(c);
    const userName = eqFilter(c.req.query('filter'), 'userName');
    const { total, rows } = await store.scim.users(c.var.scimAccount, userName, p.offset, p.count);
    return c.json(
      listJson(
        total,
        p.startIndex,
        rows.map((m) => userJson(m, base(c))),
      ),
    );
  });

  app.post('/Users', async (c) => {
    const b = await body(c);
    const ch = userChanges(b);
    if (!ch.email) throw new ScimError(400, 'userName: an email address is required.', 'invalidValue');
    try {
      const m = await store.scim.createUser(
        {
          id: newId('user'),
          accountId: c.var.scimAccount,
          email: ch.email,
          name: ch.name ?? ch.email,
          externalId: typeof b.externalId === 'string' ? b.externalId : null,
        },
        { actor: 'scim', action: 'member.provisioned', targetId: null, details: { email: ch.email } },
      );
      await store.invites.acceptFor(c.var.scimAccount, m.email, m.id);
      if (ch.active === false) await deprovision(c.var.scimAccount, m.id, 'SCIM: created inactive');
      return c.json(await user(c, m.id), 201);
    } catch (err) {
      if (err instanceof DuplicateMemberError)
        throw new ScimError(409, `A member with userName '${ch.email}' exists.`, 'uniqueness');
      if (err instanceof SeatLimitError)
        throw new ScimError(403, `Every seat of the ${err.planName} plan is taken.`);
      throw err;
    }
  });

  app.get('/Users/:id', async (c) => c.json(await user(c, c.req.param('id'))));
  app.put('/Users/:id', async (c) => change(c, c.req.param('id'), userChanges(await body(c))));

  app.patch('/Users/:id', async (c) => {
    const ch: ReturnType<typeof userChanges> = {};
    for (const op of operations(await body(c))) {
      const kind = String(op.op ?? '').toLowerCase();
      if (kind !== 'replace' && kind !== 'add')
        throw new ScimError(400, `op '${op.op}' is not supported on users.`, 'invalidValue');
      const path = typeof op.path === 'string' ? op.path : null;
      Object.assign(
        ch,
        userChanges(
          path ? { [path === 'name.formatted' ? 'displayName' : path]: op.value } : (op.value ?? {}),
        ),
      );
    }
    return change(c, c.req.param('id'), ch);
  });

  app.delete('/Users/:id', async (c) => {
    const id = c.req.param('id');
    if (!(await store.scim.user(c.var.scimAccount, id)))
      throw new ScimError(404, `No user '${id}'.`, 'noTarget');
    await deprovision(c.var.scimAccount, id, 'SCIM: deleted');
    return c.body(null, 204);
  });

  const group = async (c: Context<ScimEnv>, id: string) => {
    const g = await store.scim.group(c.var.scimAccount, id);
    if (!g) throw new ScimError(404, `No group '${id}'.`, 'noTarget');
    return groupJson(g, base(c));
  };

  app.get('/Groups', async (c) => {
    const p = page(c);
    const name = eqFilter(c.req.query('filter'), 'displayName');
    const { total, rows } = await store.scim.groups(c.var.scimAccount, name, p.offset, p.count);
    return c.json(
      listJson(
        total,
        p.startIndex,
        rows.map((g) => groupJson(g, base(c))),
      ),
    );
  });

  app.post('/Groups', async (c) => {
    const b = await body(c);
    if (typeof b.displayName !== 'string' || !b.displayName.trim())
      throw new ScimError(400, 'displayName is required.', 'invalidValue');
    try {
      const g = await store.scim.saveGroup(
        {
          id: newId('scimgrp'),
          accountId: c.var.scimAccount,
          displayName: b.displayName.trim().slice(0, 200),
          externalId: typeof b.externalId === 'string' ? b.externalId : null,
        },
        { set: memberValues(b.members) },
        true,
      );
      return c.json(groupJson(g!, base(c)), 201);
    } catch (err) {
      if ((err as { code?: string }).code === '23505')
        throw new ScimError(409, `A group named '${b.displayName}' exists.`, 'uniqueness');
      throw err;
    }
  });

  app.get('/Groups/:id', async (c) => c.json(await group(c, c.req.param('id'))));

  app.put('/Groups/:id', async (c) => {
    const b = await body(c);
    const id = c.req.param('id');
    const saved = await store.scim.saveGroup(
      {
        id,
        accountId: c.var.scimAccount,
        ...(typeof b.displayName === 'string' ? { displayName: b.displayName.trim().slice(0, 200) } : {}),
      },
      { set: memberValues(b.members) },
      false,
    );
    if (!saved) throw new ScimError(404, `No group '${id}'.`, 'noTarget');
    return c.json(groupJson(saved, base(c)));
  });

  app.patch('/Groups/:id', async (c) => {
    const id = c.req.param('id');
    const members: { set?: string[]; add: string[]; remove: string[] } = { add: [], remove: [] };
    let displayName: string | undefined;
    for (const op of operations(await body(c))) {
      const kind = String(op.op ?? '').toLowerCase();
      const path = typeof op.path === 'string' ? op.path : '';
      const one = /^members\[value eq "([^"]+)"\]$/i.exec(path);
      if (kind === 'remove' && one) members.remove.push(one[1]!);
      else if (kind === 'remove' && /^members$/i.test(path)) members.remove.push(...memberValues(op.value));
      else if (kind === 'add' && /^members$/i.test(path)) members.add.push(...memberValues(op.value));
      else if (kind === 'replace' && /^members$/i.test(path)) members.set = memberValues(op.value);
      else if ((kind === 'replace' || kind === 'add') && /^displayName$/i.test(path))
        displayName = String(op.value);
      else if ((kind === 'replace' || kind === 'add') && !path && op.value && typeof op.value === 'object') {
        if (typeof op.value.displayName === 'string') displayName = op.value.displayName;
        if (op.value.members) members.add.push(...memberValues(op.value.members));
      } else
        throw new ScimError(
          400,
          `Unsupported operation '${op.op}' on '${path || 'the group'}'.`,
          'invalidValue',
        );
    }
    const saved = await store.scim.saveGroup(
      {
        id,
        accountId: c.var.scimAccount,
        ...(displayName ? { displayName: displayName.trim().slice(0, 200) } : {}),
      },
      members,
      false,
    );
    if (!saved) throw new ScimError(404, `No group '${id}'.`, 'noTarget');
    return c.json(groupJson(saved, base(c)));
  });

  app.delete('/Groups/:id', async (c) => {
    const id = c.req.param('id');
    if (!(await store.scim.deleteGroup(c.var.scimAccount, id)))
      throw new ScimError(404, `No group '${id}'.`, 'noTarget');
    return c.body(null, 204);
  });
  return app;
}
