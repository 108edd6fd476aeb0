import { Hono, type Context } from 'hono';
import { performance } from 'node:perf_hooks';
import { PatternRouter } from 'hono/router/pattern-router';
import { accountApi } from './account-api/routes';
import { apiDocsRoutes } from './api-docs/routes';
import type { AppEnv } from './app-env';
import type { Readiness } from './health/readiness';
import { healthRoutes } from './health/routes';
import { spendStatusRoutes } from './budgets/spend-status';
import { cloudFrontRoutes } from './cloud-fronts/routes';
import { claudeCodeEnvRoutes } from './claude-gateway/env-routes';
import { CLAUDE_BASE, claudeGatewayRoutes } from './claude-gateway/routes';
import type { GatewayMetrics } from './metrics/metrics';
import { metricsRoutes } from './metrics/routes';
import { dashboardRoutes } from './dashboard/routes';
import { deviceRoutes } from './identity-api/device-routes';
import { federationAdminRoutes } from './federation/admin-routes';
import { tokenRoutes } from './federation/token-routes';
import { upstreamRoutes } from './upstreams/routes';
import { scimRoutes } from './identity-api/scim-routes';
import { stripeWebhookRoutes } from './account-api/stripe-webhook-routes';
import type { BillingDeps } from './billing/lifecycle';
import { errorResponse, GatewayError, newRequestId, renderError } from './lib/errors';
import { discardUnread } from './lib/body-limit';
import { operatorRoutes } from './operator/routes';
import { otlpRoutes } from './otlp/routes';
import { bodyReader } from './pipeline/body-reader';
import { BODIES } from './pipeline/endpoint-row';
import { messagesFastPath } from './proxy/fast-path';
import { doubledV1 } from './proxy/doubled-v1';
import { proxyRoutes, type ProxyOptions } from './proxy/routes';
import { batchRoutes } from './surface/batch-routes';
import { messageRefCheck } from './surface/body-check';
import { filesRoutes } from './surface/files-routes';
import { modelsRoutes } from './surface/models-routes';
import { ownedRoutes } from './surface/owned-routes';
import { passthroughRoutes } from './surface/passthrough-routes';
import type { Organization } from './account-api/install';
import type { Dashboard } from './dashboard/install';
import type { Messages } from './surface/install';
import type { Identity } from './federation/install';
import type { Telemetry } from './otlp/install';
import type { Kernel } from './kernel/kernel';

/**
 * What the app is built from: the kernel's shared services and each capability's parts. No
 * field is optional; the composition root (server.ts) wires them.
 */
export interface AppDeps {
  kernel: Kernel;
  /** The operator API's bearer token (null: the operator API refuses every call). */
  operatorToken: string | null;
  messages: Messages;
  identity: Identity;
  telemetry: Telemetry;
  billing: BillingDeps;
  organization: Organization;
  dashboard: Dashboard;
  readiness: () => Promise<Readiness>;
  /** `/metrics` on this app, behind its own bearer token (KEYGATE_METRICS_TOKEN); null when not served here. */
  metrics: { registry: GatewayMetrics; token: string } | null;
}

/** Builds the gateway's HTTP app from injected dependencies; no module-level state. */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { kernel, messages, identity } = deps;
  const { config, logger, access } = kernel;
  const base = {
    store: deps.organization.store,
    box: kernel.box,
    clock: kernel.clock,
    logger,
    operatorToken: deps.operatorToken,
    evict: kernel.keys,
    resolver: kernel.keys,
    trialDays: config.trialDays,
    webhooks: { egress: kernel.egress, maxEndpoints: config.webhooks.maxEndpoints },
    billing: deps.billing,
    prices: kernel.prices,
    identity: identity.tokens,
    scimTokens: identity.store.scim,
    flushLastUsed: kernel.flushLastUsed,
    otlpRelay: deps.telemetry.relay,
    upstreamUrl: config.upstreamUrl,
  };
  const admin = {
    ...base,
    capabilityRoutes: [
      federationAdminRoutes({ store: identity.store, evict: kernel.keys }),
      upstreamRoutes(base),
      claudeCodeEnvRoutes({ store: identity.store }),
    ],
  };

  app.use('*', async function requestId(c, next) {
    const id = newRequestId();
    const startedAt = performance.now();
    const log = logger.child({ requestId: id });
    c.set('requestId', id);
    c.set('startedAt', startedAt);
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

  app.use('*', async function discardUnreadBody(c, next) {
    await next();
    // Answered before its body was read whole (a page that refused a form, a route that reads
    // none): the rest is discarded and the connection lingers, then closes, or a client still
    // sending gets a reset in place of the answer. Errors do the same in onError below.
    const incoming = c.env?.incoming;
    if (!incoming || c.res.headers.has('x-hono-already-sent') || !discardUnread(incoming)) return;
    try {
      c.res.headers.set('connection', 'close');
    } catch {
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set('connection', 'close');
    }
  });

  app.onError((err, c) => {
    const res = renderError(err, c, (error) =>
      (c.var.logger ?? logger).error('unhandled error', { error, stack: error.stack }),
    );
    // Refused before its body was read (a wrong key on a large upload): the answer closes the
    // connection and the rest is discarded after it, so the client reads the answer, not a reset.
    const incoming = c.env?.incoming;
    if (incoming && discardUnread(incoming) && res instanceof Response)
      res.headers.set('connection', 'close');
    return res;
  });

  let methods: ((path: string) => string[]) | null = null;
  const notFound = function notFound(c: Context<AppEnv>) {
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
  };
  app.notFound(notFound);

  app.route('/', healthRoutes(deps.readiness, [deps.operatorToken, deps.metrics?.token]));
  // The gateway's address opened in a browser: the dashboard, which asks for a sign-in.
  app.on(['GET', 'HEAD'], '/', (c) => c.redirect('/dashboard', 302));
  // Claude Code probes this; answering keeps its startup quiet.
  app.on(['GET', 'HEAD'], '/api/hello', (c) => c.body(null, 200));
  // Browsers ask for it on every page the gateway serves (the dashboard's pages name it too).
  app.on(['GET', 'HEAD'], '/favicon.ico', (c) => c.redirect('/dashboard/assets/favicon.svg', 301));

  if (deps.metrics) app.route('/', metricsRoutes(deps.metrics.registry, deps.metrics.token));
  app.use('/billing/stripe/webhook', bodyReader(BODIES.stripeWebhook));
  app.use('/idp/v1/*', bodyReader(BODIES.idp));
  // Before the proxy's own: model discovery answered from a cached list within Claude Code's budget.
  const proxyDeps = proxyOptions(deps);
  const models = modelsRoutes(messages.proxy, { ttlMs: messages.modelsCacheMs });
  const proxy = proxyRoutes(proxyDeps);
  const otlp = {
    resolver: kernel.keys,
    store: deps.telemetry.store,
    clock: kernel.clock,
    relay: deps.telemetry.relay,
  };
  app.route('/', models);
  app.all('/v1/v1/*', doubledV1);
  app.route('/', tokenRoutes(identity.exchange));
  app.route('/', proxy);
  // Bedrock InvokeModel and Vertex rawPredict, as Messages calls through the same pipeline.
  app.route('/', cloudFrontRoutes(proxyDeps));
  const spendStatus = spendStatusRoutes({
    store: deps.organization.store,
    clock: kernel.clock,
    prices: kernel.prices,
    resolver: kernel.keys,
  });
  app.route('/', spendStatus);
  // Claude Code's `/login` to a gateway, per account; its calls, model list and telemetry go
  // through the same routes as above, under the account's base.
  app.route(
    CLAUDE_BASE,
    claudeGatewayRoutes({
      resolver: kernel.keys,
      store: identity.store,
      identity: identity.tokens,
      clock: kernel.clock,
      publicUrl: kernel.publicUrl,
    }),
  );
  app.route(CLAUDE_BASE, models);
  app.route(CLAUDE_BASE, proxy);
  app.route(CLAUDE_BASE, spendStatus);
  app.route(CLAUDE_BASE, otlpRoutes(otlp, ''));
  const surface = {
    proxy: messages.proxy,
    objects: messages.objects,
    maxFileBytes: messages.maxFileBytes,
  };
  app.route('/', filesRoutes(surface));
  app.route('/', ownedRoutes(surface));
  app.route(
    '/',
    batchRoutes({
      ...surface,
      publicUrl: kernel.publicUrl,
      prices: kernel.prices,
      settle: (id: string) => messages.follower.settle(id),
      holds: kernel.limits.admission,
    }),
  );
  app.route('/', stripeWebhookRoutes(admin.billing));
  app.route('/', otlpRoutes(otlp));
  app.route('/v1/organizations', accountApi(admin));
  app.route('/operator/v1', operatorRoutes(admin));
  app.route('/idp/v1', deviceRoutes(identity.tokens));
  app.route('/scim/v2', scimRoutes(identity.store));
  app.route('/dashboard', dashboardRoutes({ ...admin, store: deps.dashboard.store }));
  app.route('/', apiDocsRoutes(app));
  // Last: it takes what no route above serves.
  if (messages.openPassthrough)
    app.route(
      '/',
      passthroughRoutes(
        messages.proxy,
        messages.objects,
        (path) => (methods ??= methodsByPath(app))(path).length > 0,
        notFound,
      ),
    );
  return app;
}

const proxyOptions = (deps: AppDeps): ProxyOptions => ({
  ...deps.messages.proxy,
  checkFileRefs: messageRefCheck(deps.messages.objects),
});

/** `POST /v1/messages` straight from Node's request event (proxy/fast-path.ts), as the app would serve it. */
export function createFastPath(deps: AppDeps) {
  const { logger, access } = deps.kernel;
  return messagesFastPath({ proxy: proxyOptions(deps), logger, access });
}

/** The methods the app's routes (not its middleware) take at a path, from its route table. */
function methodsByPath(app: Hono<AppEnv>): (path: string) => string[] {
  const router = new PatternRouter<string>();
  for (const r of app.routes) if (r.method !== 'ALL') router.add('ALL', r.path, r.method);
  return (path) => [...new Set(router.match('ALL', path)[0].map(([method]) => method))];
}
