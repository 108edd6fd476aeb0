import { Hono } from 'hono';
import { createHash, timingSafeEqual } from 'node:crypto';
import { presentedCredential } from '../lib/credentials';
import type { Readiness } from './readiness';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * `/healthz`: the process serves HTTP (no dependency is asked, so a database outage never
 * gets a live instance restarted); `/health` is its old name. `/readyz`: 200 when this
 * instance can serve calls and record them (`degraded` while the database is away and calls are
 * served from memory and spooled), else 503. Its details (which check failed, the
 * upstream's address, the spool's state) go only to the metrics or the operator token: to
 * anyone else they map the deployment.
 */
export function healthRoutes(
  ready: () => Promise<Readiness>,
  tokens: Array<string | null | undefined>,
): Hono {
  const app = new Hono();
  const allowed = tokens.filter((t): t is string => !!t).map(digest);
  const alive = () => Response.json({ status: 'ok' });
  app.get('/healthz', alive);
  app.get('/health', alive);
  app.get('/readyz', async (c) => {
    const report = await ready();
    const status = report.status === 'not_ready' ? 503 : 200;
    const presented = digest(presentedCredential(c.req.header('authorization'), undefined) ?? '');
    // Every token is compared, so the time taken does not say which one matched.
    const entitled = allowed.reduce((ok, t) => timingSafeEqual(presented, t) || ok, false);
    return c.json(entitled ? report : { status: report.status }, status);
  });
  return app;
}
