import { Hono } from 'hono';
import { billingRoutes } from './billing-routes';
import { keyAuth } from '../auth/middleware';
import type { KeyResolver } from '../auth/resolver';
import { alertRoutes } from './alert-routes';
import type { RelayRouteDeps } from './otlp-relay-routes';
import type { BillingDeps } from '../billing/lifecycle';
import { plainBilling } from '../billing/setup';
import { accountRoutes } from './account-routes';
import { keyRoutes, type KeyRouteDeps } from './key-routes';
import { analyticsRoutes } from './analytics-routes';
import { reconcileRoutes } from './reconcile-routes';
import { reportRoutes } from './report-routes';
import { identityRoutes, type ScimTokens } from './identity-routes';
import type { MemberTokens } from '../identity/tokens';
import { orgRoutes } from './org-routes';
import { serviceAccountRoutes } from './service-account-routes';
import { policyRoutes } from './policy-routes';
import { rateLimitRoutes } from './rate-limit-routes';
import { spendLimitRoutes } from './spend-limit-routes';
import type { AdminEnv } from '../accounts/scope';
import { refuseNulInUrl } from '../lib/validation';
import { versionedShapes } from './api-version';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';

/**
 * The account API's routes, for whichever account `c.var.scope` names: mounted under
 * `/v1/organizations` behind admin keys, and under `/operator/v1/accounts/:account_id`
 * behind the operator token, so both answer alike.
 */
export function organizationRoutes(
  deps: KeyRouteDeps & {
    billing?: BillingDeps;
    upstreamUrl?: string;
    identity?: MemberTokens;
    /** Identity's SCIM tokens, issued and revoked here. */
    scimTokens: ScimTokens;
    /** Routes of capabilities above this room (workload identity federation), mounted alike. */
    capabilityRoutes?: readonly Hono<AdminEnv>[];
  } & Pick<RelayRouteDeps, 'otlpRelay'>,
): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const billing = deps.billing ?? plainBilling(deps.store, deps.clock);
  app.use('*', refuseNulInUrl());
  app.use('*', versionedShapes());
  app.route('/', accountRoutes(deps));
  app.route('/', keyRoutes(deps));
  app.route('/', reportRoutes(deps));
  app.route('/', alertRoutes(deps));
  app.route('/', reconcileRoutes({ ...deps, store: billing.store }));
  app.route('/', analyticsRoutes(deps));
  app.route('/', identityRoutes(deps));
  app.route('/', orgRoutes(deps));
  app.route('/', serviceAccountRoutes(deps));
  app.route('/', spendLimitRoutes(deps));
  app.route('/', policyRoutes(deps));
  app.route('/', rateLimitRoutes(deps));
  for (const routes of deps.capabilityRoutes ?? []) app.route('/', routes);
  app.route('/', billingRoutes(billing));
  return app;
}

/** `/v1/organizations/…`, authenticated by an admin key (x-api-key, as the provider's Admin API, or Bearer). */
export function accountApi(
  deps: Parameters<typeof organizationRoutes>[0] & { resolver: KeyResolver },
): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.use('*', bodyReader(BODIES.api));
  app.use('*', keyAuth<AdminEnv>(deps.resolver, ['admin']));
  app.use('*', async function adminScope(c, next) {
    const { key, account } = c.var.principal;
    c.set('scope', { accountId: account.id, actor: key.id });
    await next();
  });
  app.route('/', organizationRoutes(deps));
  return app;
}
