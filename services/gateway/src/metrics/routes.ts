import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { presentedCredential } from '../lib/credentials';
import { StartupError } from '../lib/data-dir';
import { errorResponse, GatewayError, newRequestId, renderError } from '../lib/errors';
import type { GatewayMetrics } from './metrics';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** `GET /metrics` in Prometheus' text format; with a token, only to `Authorization: Bearer <token>` (compared in constant time). */
export function metricsRoutes(metrics: GatewayMetrics, token: string | null): Hono {
  const app = new Hono();
  const expected = token ? digest(token) : null;
  app.get('/metrics', async function scrape(c) {
    if (
      expected &&
      !timingSafeEqual(digest(presentedCredential(c.req.header('authorization'), undefined) ?? ''), expected)
    ) {
      throw new GatewayError(
        'authentication_error',
        "Invalid metrics token: send 'Authorization: Bearer $KEYGATE_METRICS_TOKEN'.",
      );
    }
    const { contentType, body } = await metrics.render();
    return c.body(body, 200, { 'content-type': contentType });
  });
  return app;
}

/** Serves only `/metrics` on a port of its own (KEYGATE_METRICS_PORT); answers errors in the provider's shape. */
export function serveMetrics(
  metrics: GatewayMetrics,
  opts: { host: string; port: number; token: string | null },
): Promise<{ port: number; close(): Promise<void> }> {
  const app = new Hono();
  app.onError((err, c) => renderError(err, c));
  app.notFound((c) =>
    errorResponse(
      new GatewayError(
        'not_found_error',
        `Not found: ${c.req.method} ${c.req.path}; this port serves GET /metrics only.`,
      ),
      newRequestId(),
    ),
  );
  app.route('/', metricsRoutes(metrics, opts.token));
  return new Promise((resolve, reject) => {
    const server: ServerType = serve({ fetch: app.fetch, port: opts.port, hostname: opts.host }, (info) => {
      resolve({
        port: (info as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // A scraper's keep-alive connection would hold the close open.
            if ('closeAllConnections' in server) server.closeAllConnections();
          }),
      });
    });
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new StartupError(`KEYGATE_METRICS_PORT: port ${opts.port} on ${opts.host} is already in use`)
          : err,
      ),
    );
  });
}
