import { Hono } from 'hono';
import { cursorJson, cursorQuery } from '../account-api/cursor';
import type { AdminEnv } from '../accounts/scope';
import type { ServiceDeps } from '../accounts/service';
import type { Store } from '../store';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import { operation } from '../lib/operation';
import { DuplicateNameError } from '../accounts/invite-queries';
import type { FederationQueries } from './federation-queries';
import {
  CreateIssuer,
  CreateRule,
  issuerJson,
  ListIssuers,
  ListRules,
  ruleJson,
  UpdateIssuer,
  UpdateRule,
} from './schemas';

const missing = (what: string, id: string) =>
  new GatewayError('not_found_error', `No ${what} with id '${id}'.`);
const archived = (what: string) =>
  new GatewayError('invalid_request_error', `This ${what} is archived: create a new one instead.`);
const duplicate = (what: string, name: string) =>
  new GatewayError('invalid_request_error', `name: a ${what} '${name}' exists already.`, { status: 409 });

async function named<T>(what: string, name: string | null | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof DuplicateNameError) throw duplicate(what, name ?? '');
    throw e;
  }
}

/** Federation issuers and rules of the account API (`/v1/organizations/federation_…`). */
export function federationAdminRoutes(
  deps: Pick<ServiceDeps, 'evict'> & { store: Pick<Store, 'invites'> & { federation: FederationQueries } },
): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const fed = deps.store.federation;
  const tag = 'Workload identity federation';
  const liveServiceAccount = async (accountId: string, id: string) => {
    const s = await deps.store.invites.getServiceAccount(accountId, id);
    if (!s || s.archivedAt)
      throw new GatewayError(
        'invalid_request_error',
        `target: no active service account '${id}' in this account.`,
      );
  };

  app.post(
    '/federation_issuers',
    operation({
      tag,
      summary: 'Register an OIDC issuer whose signed JWTs may be exchanged',
      body: CreateIssuer,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const i = await named('federation issuer', b.name, () =>
        fed.createIssuer(
          {
            id: newId('fdis'),
            accountId,
            name: b.name,
            issuerUrl: b.issuer_url,
            jwks: b.jwks,
            checkJti: b.check_jti ?? true,
            maxJwtLifetimeSeconds: b.max_jwt_lifetime_seconds ?? 3600,
          },
          actor,
        ),
      );
      return c.json(issuerJson(i));
    },
  );
  app.get(
    '/federation_issuers',
    operation({ tag, summary: 'List federation issuers', query: ListIssuers }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await fed.listIssuers(c.var.scope.accountId, q.include_archived, cursorQuery(q));
      return c.json(cursorJson(page, issuerJson, (i) => i.id));
    },
  );
  app.get('/federation_issuers/:id', operation({ tag, summary: 'A federation issuer' }), async (c) => {
    const i = await fed.getIssuer(c.var.scope.accountId, c.req.param('id'));
    if (!i) throw missing('federation issuer', c.req.param('id'));
    return c.json(issuerJson(i));
  });
  app.post(
    '/federation_issuers/:id',
    operation({
      tag,
      summary: 'Change an issuer; a new issuer_url or jwks ends the tokens its rules minted',
      body: UpdateIssuer,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const patch = {
        ...(b.name ? { name: b.name } : {}),
        ...(b.issuer_url ? { issuerUrl: b.issuer_url } : {}),
        ...(b.jwks ? { jwks: b.jwks } : {}),
        ...(b.check_jti != null ? { checkJti: b.check_jti } : {}),
        ...(b.max_jwt_lifetime_seconds ? { maxJwtLifetimeSeconds: b.max_jwt_lifetime_seconds } : {}),
      };
      const i = await named('federation issuer', b.name, () =>
        fed.updateIssuer(accountId, c.req.param('id'), patch, actor),
      );
      if (!i) throw missing('federation issuer', c.req.param('id'));
      if (i === 'archived') throw archived('federation issuer');
      // Other instances hear it through the database; this one drops its cached tokens now.
      deps.evict?.invalidateAccount(accountId);
      return c.json(issuerJson(i));
    },
  );
  app.post(
    '/federation_issuers/:id/archive',
    operation({ tag, summary: 'Archive an issuer (refused while a live rule names it)' }),
    async (c) => {
      const i = await fed.archiveIssuer(c.var.scope.accountId, c.req.param('id'), c.var.scope.actor);
      if (!i) throw missing('federation issuer', c.req.param('id'));
      if (i === 'in-use')
        throw new GatewayError(
          'invalid_request_error',
          'A live federation rule still names this issuer: archive its rules first.',
        );
      return c.json(issuerJson(i));
    },
  );

  app.post(
    '/federation_rules',
    operation({
      tag,
      summary: "Bind an issuer's matching assertions to a service account",
      body: CreateRule,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const issuer = await fed.getIssuer(accountId, b.issuer_id);
      if (!issuer || issuer.archivedAt)
        throw new GatewayError(
          'invalid_request_error',
          `issuer_id: no active federation issuer '${b.issuer_id}'.`,
        );
      await liveServiceAccount(accountId, b.target.service_account_id);
      const r = await named('federation rule', b.name, () =>
        fed.createRule(
          {
            id: newId('fdrl'),
            accountId,
            issuerId: issuer.id,
            serviceAccountId: b.target.service_account_id,
            name: b.name,
            description: b.description ?? null,
            match: b.match,
            tokenLifetimeSeconds: b.token_lifetime_seconds ?? 3600,
            enabled: b.enabled ?? true,
          },
          actor,
        ),
      );
      return c.json(ruleJson(r));
    },
  );
  app.get(
    '/federation_rules',
    operation({ tag, summary: 'List federation rules', query: ListRules }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await fed.listRules(
        c.var.scope.accountId,
        { issuerId: q.issuer_id ?? null, archived: q.include_archived },
        cursorQuery(q),
      );
      return c.json(cursorJson(page, ruleJson, (r) => r.id));
    },
  );
  app.get('/federation_rules/:id', operation({ tag, summary: 'A federation rule' }), async (c) => {
    const r = await fed.getRule(c.var.scope.accountId, c.req.param('id'));
    if (!r) throw missing('federation rule', c.req.param('id'));
    return c.json(ruleJson(r));
  });
  app.post(
    '/federation_rules/:id',
    operation({
      tag,
      summary: 'Change a rule; a new match or target, or disabling it, ends the tokens it minted',
      body: UpdateRule,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      if (b.target) await liveServiceAccount(accountId, b.target.service_account_id);
      const patch = {
        ...(b.name ? { name: b.name } : {}),
        ...(b.description !== undefined ? { description: b.description } : {}),
        ...(b.match ? { match: b.match } : {}),
        ...(b.target ? { serviceAccountId: b.target.service_account_id } : {}),
        ...(b.token_lifetime_seconds ? { tokenLifetimeSeconds: b.token_lifetime_seconds } : {}),
        ...(b.enabled != null ? { enabled: b.enabled } : {}),
      };
      const r = await named('federation rule', b.name, () =>
        fed.updateRule(accountId, c.req.param('id'), patch, actor),
      );
      if (!r) throw missing('federation rule', c.req.param('id'));
      if (r === 'archived') throw archived('federation rule');
      deps.evict?.invalidateAccount(accountId);
      return c.json(ruleJson(r));
    },
  );
  app.post(
    '/federation_rules/:id/archive',
    operation({ tag, summary: 'Archive a rule: exchange through it stops and the tokens it minted end' }),
    async (c) => {
      const r = await fed.archiveRule(c.var.scope.accountId, c.req.param('id'), c.var.scope.actor);
      if (!r) throw missing('federation rule', c.req.param('id'));
      deps.evict?.invalidateAccount(c.var.scope.accountId);
      return c.json(ruleJson(r));
    },
  );
  return app;
}
