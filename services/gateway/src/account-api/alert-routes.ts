import { Hono } from 'hono';
import type { ServiceDeps } from '../accounts/service';
import type { AdminEnv } from '../accounts/scope';
import { budgetRoutes } from './budget-routes';
import { webhookRoutes } from './webhook-routes';

/** Budgets and the webhooks their alerts (and others) go to. */
export function alertRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.route('/', budgetRoutes(deps));
  app.route('/', webhookRoutes(deps));
  return app;
}
