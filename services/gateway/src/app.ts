import type { PriceBook } from './pricing/catalog/price-book';
import { Hono, type Context } from 'hono';
import { performance } from 'node:perf_hooks';
import { PatternRouter } from 'hono/router/pattern-router';
import { accountApi } from './account-api/routes';
import type { ServiceDeps } from './accounts/service';
import { apiDocsRoutes } from './api-docs/routes';
import type { AppEnv } from './app-env';
import type { Readiness } from './health/readiness';
import { healthRoutes } from './health/routes';
import { CLAUDE_BASE, claudeGatewayRoutes } from './claude-gateway/routes';
import { AccessLog } from './metrics/access-log';
import type { GatewayMetrics } from './metrics/metrics';
import { metricsRoutes } from './metrics/routes';
import { dashboardRoutes } from './dashboard/routes';
import { deviceRoutes } from './identity-api/device-routes';
import type { WorkloadExchange } from './federation/exchange';
import { federationAdminRoutes } from './federation/admin-routes';
import { tokenRoutes } from './federation/token-routes';
import { upstreamRoutes } from './upstreams/routes';
import { scimRoutes } from './identity-api/scim-routes';
import type { MemberTokens } from './identity/tokens';
import { stripeWebhookRoutes } from './account-api/stripe-webhook-routes';
import type { BillingDeps } from './billing/lifecycle';
import { plainBilling } from './billing/setup';
import { errorResponse, GatewayError, newRequestId, renderError } from './lib/errors';
import { discardUnread } from './lib/body-limit';
import type { Logger } from './lib/logger';
import { operatorRoutes } from './operator/routes';
import type { OtlpRelay } from './otlp/relay';
import { otlpRoutes } from './otlp/routes';
import { bodyReader } from './pipeline/body-reader';
import { BODIES } from './pipeline/endpoint-row';
import { messagesFastPath } from './proxy/fast-path';
import { doubledV1 } from './proxy/doubled-v1';
import { proxyRoutes, type ProxyOptions } from './proxy/routes';
import { batchRoutes, type BatchHolds } from './surface/batch-routes';
import { messageRefCheck } from './surface/body-check';
import { filesRoutes } from './surface/files-routes';
import { modelsRoutes } from './surface/models-routes';
import { ownedRoutes } from './surface/owned-routes';
import { passthroughRoutes } from './surface/passthrough-routes';

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
  /** Access lines; the finished-call fan-out holds each call's record in it (server.ts). */
  access?: AccessLog;
  prices?: PriceBook;
  /** Forwards any other `/v1/…` path to the provider (KEYGATE_OPEN_PASSTHROUGH). */
  openPassthrough?: boolean;
  /** Largest file upload through `/v1/files` (KEYGATE_MAX_FILE_BYTES). */
  maxFileBytes?: number;
  /** How long the model list is served from cache (KEYGATE_MODELS_CACHE_MS). */
  modelsCacheMs?: number;
  /** Records an ended batch's results now (the batch follower). */
  settleBatch?(batchId: string): Promise<void>;
  /** Budgets and spend caps hold a batch's ceiling at its creation (admission/). */
  batchHolds?: BatchHolds;
  /**
   * Keygate's address as clients reach it (KEYGATE_PUBLIC_URL, else where it listens): batch
   * `results_url`s name it. Without it (an app built outside startGateway) they are paths.
   */
  publicUrl?: () => string;
  /** The provider's base URL, for reconciliation with its Admin API reports. */
  upstreamUrl?: string;
  /** Relays received Claude Code telemetry to each account's own collector, if it set one. */
  otlpRelay?: OtlpRelay | null;
  /** Sign-in through accounts' identity providers: member tokens, device flow, SCIM. */
  identity?: MemberTokens;
  /** Workload tokens from an issuer's signed JWT (`POST /v1/oauth/token`). */
  workloadExchange?: WorkloadExchange;
}

/** Builds the gateway's HTTP app from injected dependencies; no module-level state. */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const base = {
    ...deps,
    evict: deps.evict ?? deps.proxy.resolver,
    billing: deps.billing ?? plainBilling(deps.store, deps.clock),
  };
  const admin = { ...base, capabilityRoutes: [federationAdminRoutes(base), upstreamRoutes(base)] };
  const access = deps.access ?? new AccessLog();

  app.use('*', async function requestId(c, next) {
    const id = newRequestId();
    const startedAt = performance.now();
    const log = deps.logger.child({ requestId: id });
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
      (c.var.logger ?? deps.logger).error('unhandled error', { error, stack: error.stack }),
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
  const models = modelsRoutes(
    deps.proxy,
    deps.modelsCacheMs === undefined ? {} : { ttlMs: deps.modelsCacheMs },
  );
  const proxy = proxyRoutes(proxyOptions(deps));
  const otlp = {
    resolver: deps.proxy.resolver,
    store: deps.store,
    clock: deps.clock,
    relay: deps.otlpRelay ?? null,
  };
  app.route('/', models);
  app.all('/v1/v1/*', doubledV1);
  if (deps.workloadExchange) app.route('/', tokenRoutes(deps.workloadExchange));
  app.route('/', proxy);
  if (deps.identity) {
    // Claude Code's `/login` to a gateway, per account; its calls, model list and telemetry go
    // through the same routes as above, under the account's base.
    app.route(
      CLAUDE_BASE,
      claudeGatewayRoutes({
        resolver: deps.proxy.resolver,
        store: deps.store,
        identity: deps.identity,
        clock: deps.clock,
        ...(deps.publicUrl ? { publicUrl: deps.publicUrl } : {}),
      }),
    );
    app.route(CLAUDE_BASE, models);
    app.route(CLAUDE_BASE, proxy);
    app.route(CLAUDE_BASE, otlpRoutes(otlp, ''));
  }
  const surface = {
    proxy: deps.proxy,
    objects: deps.store.objects,
    maxFileBytes: deps.maxFileBytes ?? 500 * 1024 * 1024,
  };
  app.route('/', filesRoutes(surface));
  app.route('/', ownedRoutes(surface));
  app.route(
    '/',
    batchRoutes({
      ...surface,
      publicUrl: deps.publicUrl ?? (() => ''),
      ...(deps.settleBatch ? { settle: deps.settleBatch } : {}),
      ...(deps.batchHolds ? { holds: deps.batchHolds } : {}),
    }),
  );
  app.route('/', stripeWebhookRoutes(admin.billing));
  app.route('/', otlpRoutes(otlp));
  app.route('/v1/organizations', accountApi({ ...admin, resolver: deps.proxy.resolver }));
  app.route('/operator/v1', operatorRoutes(admin));
  if (deps.identity) app.route('/idp/v1', deviceRoutes(deps.identity));
  app.route('/scim/v2', scimRoutes(deps.store));
  app.route('/dashboard', dashboardRoutes({ ...admin, resolver: deps.proxy.resolver }));
  app.route('/', apiDocsRoutes(app));
  // Last: it takes what no route above serves.
  if (deps.openPassthrough)
    app.route(
      '/',
      passthroughRoutes(
        deps.proxy,
        deps.store.objects,
        (path) => (methods ??= methodsByPath(app))(path).length > 0,
        notFound,
      ),
    );
  return app;
}

const proxyOptions = (deps: AppDeps): ProxyOptions => ({
  ...deps.proxy,
  checkFileRefs: messageRefCheck(deps.store.objects),
});

/** `POST /v1/messages` straight from Node's request event (proxy/fast-path.ts), as the app would serve it. */
export function createFastPath(deps: AppDeps & { access: AccessLog }) {
  return messagesFastPath({ proxy: proxyOptions(deps), logger: deps.logger, access: deps.access });
}

/** The methods the app's routes (not its middleware) take at a path, from its route table. */
function methodsByPath(app: Hono<AppEnv>): (path: string) => string[] {
  const router = new PatternRouter<string>();
  for (const r of app.routes) if (r.method !== 'ALL') router.add('ALL', r.path, r.method);
  return (path) => [...new Set(router.match('ALL', path)[0].map(([method]) => method))];
}
