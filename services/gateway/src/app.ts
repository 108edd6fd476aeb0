import type { PriceBook } from './billing/catalog/price-book';
import { Hono } from 'hono';
import { performance } from 'node:perf_hooks';
import { PatternRouter } from 'hono/router/pattern-router';
import { accountApi } from './account-api/routes';
import type { ServiceDeps } from './accounts/service';
import { apiDocsRoutes } from './api-docs/routes';
import type { AppEnv } from './app-env';
import type { Readiness } from './health/readiness';
import { healthRoutes } from './health/routes';
import { AccessLog } from './metrics/access-log';
import type { GatewayMetrics } from './metrics/metrics';
import { metricsRoutes } from './metrics/routes';
import { dashboardRoutes } from './dashboard/routes';
import { stripeWebhookRoutes } from './account-api/stripe-webhook-routes';
import type { BillingDeps } from './billing/lifecycle';
import { plainBilling } from './billing/setup';
import { errorResponse, GatewayError, newRequestId, renderError } from './lib/errors';
import type { Logger } from './lib/logger';
import { operatorRoutes } from './operator/routes';
import { proxyRoutes, type ProxyOptions } from './proxy/routes';

export interface AppDeps extends ServiceDeps {
  logger: Logger;
  operatorToken: string | null;
  proxy: ProxyOptions;
  /** Writes pending last-use times, so key listings show them. */
  flushLastUsed?: () => Promise<void>;
  readiness: () => Promise<Readiness>;
  /** `/metrics` on this app, behind its own bearer token (KEYGATE_METRICS_TOKEN). */
  metrics?: { registry: GatewayMetrics; token: string } | null;
  billing?: BillingDeps;
  prices?: PriceBook;
  /** The provider's base URL, for reconciliation with its Admin API reports. */
  upstreamUrl?: string;
}

/** Builds the gateway's HTTP app from injected dependencies; no module-level state. */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const admin = {
    ...deps,
    evict: deps.evict ?? deps.proxy.resolver,
    billing: deps.billing ?? plainBilling(deps.store, deps.clock),
  };
  const access = new AccessLog();
  const proxy: ProxyOptions = {
    ...deps.proxy,
    record(r) {
      access.hold(r);
      deps.proxy.record(r);
    },
  };

  app.use('*', async function requestId(c, next) {
    const id = newRequestId();
    const startedAt = performance.now();
    const log = deps.logger.child({ requestId: id });
    c.set('requestId', id);
    c.set('logger', log);
    await next();
    // Every answer carries a request id; the proxy writes its own (and the provider's) itself.
    const headers = c.res.headers;
    if (!headers.has('request-id') && !headers.has('x-hono-already-sent')) headers.set('request-id', id);
    access.write(
      log,
      id,
      { method: c.req.method, path: c.req.path, status: c.res.status, startedAt },
      performance.now(),
    );
  });

  app.onError((err, c) =>
    renderError(err, c, (error) =>
      (c.var.logger ?? deps.logger).error('unhandled error', { error, stack: error.stack }),
    ),
  );

  let methods: ((path: string) => string[]) | null = null;
  app.notFound(function notFound(c) {
    const allow = (methods ??= methodsByPath(app))(c.req.path);
    // A route of this path under another method: 405 invalid_request_error, as the provider answers.
    if (allow.length && !allow.includes(c.req.method)) {
      const err = new GatewayError(
        'invalid_request_error',
        `Method Not Allowed: ${c.req.method} ${c.req.path} takes ${allow.join(', ')}.`,
        {
          status: 405,
          headers: { allow: allow.join(', ') },
        },
      );
      return errorResponse(err, c.var.requestId);
    }
    return errorResponse(
      new GatewayError('not_found_error', `Not found: ${c.req.method} ${c.req.path}`),
      c.var.requestId,
    );
  });

  app.route('/', healthRoutes(deps.readiness));
  // Claude Code probes this; answering keeps its startup quiet.
  app.on(['GET', 'HEAD'], '/api/hello', (c) => c.body(null, 200));

  if (deps.metrics) app.route('/', metricsRoutes(deps.metrics.registry, deps.metrics.token));
  app.route('/', proxyRoutes(proxy));
  app.route('/', stripeWebhookRoutes(admin.billing));
  app.route('/v1/organizations', accountApi({ ...admin, resolver: deps.proxy.resolver }));
  app.route('/operator/v1', operatorRoutes(admin));
  app.route('/dashboard', dashboardRoutes({ ...admin, resolver: deps.proxy.resolver }));
  app.route('/', apiDocsRoutes(app));
  return app;
}

/** The methods the app's routes (not its middleware) take at a path, from its route table. */
function methodsByPath(app: Hono<AppEnv>): (path: string) => string[] {
  const router = new PatternRouter<string>();
  for (const r of app.routes) if (r.method !== 'ALL') router.add('ALL', r.path, r.method);
  return (path) => [...new Set(router.match('ALL', path)[0].map(([method]) => method))];
}
