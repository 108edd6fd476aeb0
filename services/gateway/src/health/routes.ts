import { Hono } from 'hono';
import type { Readiness } from './readiness';

/**
 * `/healthz`: the process serves HTTP (no dependency is asked, so a database outage never
 * gets a live instance restarted); `/health` is its old name. `/readyz`: 200 when this
 * instance can serve calls and record them, else 503; the body says which check failed.
 */
export function healthRoutes(ready: () => Promise<Readiness>): Hono {
  const app = new Hono();
  const alive = () => Response.json({ status: 'ok' });
  app.get('/healthz', alive);
  app.get('/health', alive);
  app.get('/readyz', async (c) => {
    const report = await ready();
    return c.json(report, report.status === 'ready' ? 200 : 503);
  });
  return app;
}
