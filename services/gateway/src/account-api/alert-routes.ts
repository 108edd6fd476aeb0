import type { Prices } from '../pricing/prices';
import { Hono } from 'hono';
import type { ServiceDeps } from '../accounts/service';
import type { AdminEnv } from '../accounts/scope';
import { budgetRoutes } from './budget-routes';
import { otlpRelayRoutes, type RelayRouteDeps } from './otlp-relay-routes';
import { webhookRoutes } from './webhook-routes';

/** Budgets, the webhooks their alerts (and others) go to, and where Claude Code telemetry is relayed. */
export function alertRoutes(
  deps: ServiceDeps & { prices: Prices } & Pick<RelayRouteDeps, 'otlpRelay'>,
): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.route('/', budgetRoutes(deps));
  app.route('/', webhookRoutes(deps));
  app.route('/', otlpRelayRoutes(deps));
  return app;
}
