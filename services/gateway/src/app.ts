import { Hono } from 'hono';
import type { AppEnv } from './app-env';
import type { ServiceDeps } from './admin/service';
import { errorResponse, GatewayError, newRequestId, renderError } from './lib/errors';
import type { Logger } from './lib/logger';
import { operatorRoutes } from './operator/routes';
import { proxyRoutes, type ProxyOptions } from './proxy/routes';

export interface AppDeps extends ServiceDeps {
  logger: Logger;
  operatorToken: string | null;
  proxy: ProxyOptions;
}

/** Builds the gateway's HTTP app from injected dependencies; no module-level state. */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.use('*', async function requestId(c, next) {
    c.set('requestId', newRequestId());
    await next();
  });

  app.onError((err, c) =>
    renderError(err, c, (error, requestId) => deps.logger.error('unhandled error', { requestId, error, stack: error.stack })),
  );

  app.notFound((c) => errorResponse(new GatewayError('not_found_error', `Not found: ${c.req.method} ${c.req.path}`), c.var.requestId));

  app.get('/health', (c) => c.json({ status: 'ok' }));
  // Claude Code probes this; answering keeps its startup quiet.
  app.on(['GET', 'HEAD'], '/api/hello', (c) => c.body(null, 200));

  app.route('/', proxyRoutes(deps.proxy));
  app.route('/operator/v1', operatorRoutes(deps));
  return app;
}

