import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import type { ServiceDeps } from '../accounts/service';
import { checkEndpointUrl } from '../alerts/endpoints';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import { operation } from '../lib/operation';
import { checkPrivateKey, parseServiceAccount } from './google-token';
import { AUTHS, awsCredentials, credentialHint, KINDS, RULES } from './kinds';
import { upstreamQueries, type UpstreamRow } from './queries';

const token = z.string().regex(/^[\x21-\x7e]{1,256}$/, 'visible ASCII, 1 to 256 characters');
const CreateUpstream = z.strictObject({
  kind: z.enum(KINDS),
  base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).max(2048),
  auth: z.enum(AUTHS),
  // A Google service-account JSON key runs to about 2.4 KB.
  credential: z.string().min(1).max(8192),
  workspace_id: token.nullable().optional(),
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as us-west-2')
    .nullable()
    .optional(),
  model_map: z.record(token, token).optional(),
  refused_betas: z.array(token).max(100).optional(),
  refused_fields: z
    .array(z.string().regex(/^[a-z_]{1,64}$/, 'a top-level field name'))
    .max(50)
    .optional(),
});
const Order = z.strictObject({ ids: z.array(z.string().min(1).max(64)).min(1).max(50) });

/** An upstream as the account API shows it: never its credential, only a hint of it. */
export function upstreamJson(u: UpstreamRow) {
  return {
    type: 'upstream' as const,
    id: u.id,
    position: u.position,
    kind: u.kind,
    base_url: u.baseUrl,
    auth: u.auth,
    credential_hint: u.credentialHint,
    workspace_id: u.workspaceId,
    region: u.region,
    model_map: u.modelMap,
    refused_betas: u.refusedBetas,
    refused_fields: u.refusedFields,
    created_at: u.createdAt.toISOString(),
  };
}

const invalid = (message: string) => new GatewayError('invalid_request_error', message);

/** A service-account key that can mint (its fields, its private key, a token_uri egress allows); its hint is its client_email. */
async function serviceAccountHint(deps: ServiceDeps, credential: string): Promise<string> {
  const sa = parseServiceAccount(credential);
  if (typeof sa === 'string') throw invalid(sa);
  const bad = await checkPrivateKey(sa);
  if (bad) throw invalid(bad);
  await checkEndpointUrl(deps.webhooks, sa.token_uri);
  return sa.client_email;
}

/**
 * `/v1/organizations/upstreams`: the account's upstreams after its provider key, in the order a
 * call tries them. Base URLs pass the egress policy here and at every connection.
 */
export function upstreamRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  // Built at the first request: the route table is also built without a database (endpoints.test.ts).
  let queries: ReturnType<typeof upstreamQueries> | null = null;
  const q = () => (queries ??= upstreamQueries(deps.store.db.sql));
  const tag = 'Upstreams';
  const list = (accountId: string) =>
    q()
      .list(accountId)
      .then((rows) => ({ data: rows.map(upstreamJson), has_more: false }));

  app.get('/upstreams', operation({ tag, summary: "List the account's upstreams, in order" }), async (c) =>
    c.json(await list(c.var.scope.accountId)),
  );
  app.post(
    '/upstreams',
    operation({ tag, summary: 'Add an upstream after the others', body: CreateUpstream }),
    async (c) => {
      const b = c.req.valid('json');
      const rules = RULES[b.kind];
      if (!rules.auths.includes(b.auth))
        throw invalid(`auth: ${rules.label} takes ${rules.auths.join(', ')}, not ${b.auth}.`);
      if (b.auth === 'sigv4' && !awsCredentials(b.credential))
        throw invalid('credential: SigV4 takes ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN].');
      if (rules.needsWorkspace && !b.workspace_id) throw invalid(`workspace_id: ${rules.label} needs one.`);
      if (b.auth === 'sigv4' && !b.region) throw invalid('region: SigV4 signs for a region; name it.');
      await checkEndpointUrl(deps.webhooks, b.base_url);
      const hint = b.auth === 'google-service-account' ? await serviceAccountHint(deps, b.credential) : null;
      const id = newId('ups');
      const row = await q().add({
        id,
        accountId: c.var.scope.accountId,
        kind: b.kind,
        baseUrl: b.base_url,
        auth: b.auth,
        credentialSealed: deps.box.seal(b.credential, { purpose: 'upstream-credential', row: id }),
        credentialHint: hint ?? credentialHint(b.credential),
        workspaceId: b.workspace_id ?? null,
        region: b.region ?? null,
        modelMap: b.model_map ?? {},
        refusedBetas: b.refused_betas ?? [],
        refusedFields: b.refused_fields ?? [],
      });
      return c.json(upstreamJson(row));
    },
  );
  app.delete('/upstreams/:id', operation({ tag, summary: 'Remove an upstream' }), async (c) => {
    const id = c.req.param('id');
    if (!(await q().remove(c.var.scope.accountId, id)))
      throw new GatewayError('not_found_error', `No upstream with id '${id}'.`);
    return c.json({ type: 'upstream_deleted', id });
  });
  app.post(
    '/upstreams/order',
    operation({ tag, summary: 'Put the upstreams in the order calls try them', body: Order }),
    async (c) => {
      const rows = await q().reorder(c.var.scope.accountId, c.req.valid('json').ids);
      if (!rows) throw invalid("ids: name each of the account's upstreams exactly once.");
      return c.json({ data: rows.map(upstreamJson), has_more: false });
    },
  );
  return app;
}
