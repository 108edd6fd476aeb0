import { Hono } from 'hono';
import { z } from 'zod';
import type { ServiceDeps } from '../accounts/service';
import type { AdminEnv } from '../accounts/scope';
import { reconcile } from '../billing/reconcile';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import { timestamp } from '../reports/query';
import type { ReconciliationRecord } from '../store';

const DAY = 86_400_000;

const AdminKey = z.strictObject({
  admin_key: z
    .string()
    .regex(/^sk-ant-admin\d*-[A-Za-z0-9_-]+$/, "must be a provider Admin API key ('sk-ant-admin01-…')"),
});
const Run = z.strictObject({ starting_at: timestamp.optional(), ending_at: timestamp.optional() });

const json = (r: ReconciliationRecord) => ({
  type: 'reconciliation' as const,
  id: r.id,
  starting_at: r.startingAt.toISOString(),
  ending_at: r.endingAt.toISOString(),
  ran_at: r.ranAt.toISOString(),
  drift_percent: r.driftPercent,
  ...r.result,
});

/**
 * Reconciliation with the provider: the account's provider Admin API key (sealed like its
 * provider key), a run on demand (the dashboard's button), and the latest result.
 */
export function reconcileRoutes(deps: ServiceDeps & { upstreamUrl?: string }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Reconciliation';

  app.put(
    '/provider_admin_key',
    operation({
      tag,
      summary: "Give Keygate the provider's Admin API key, to compare its usage and cost reports",
      body: AdminKey,
    }),
    async (c) => {
      const key = c.req.valid('json').admin_key;
      const hint = `${key.slice(0, 13)}…${key.slice(-4)}`;
      await deps.store.reconciliations.setAdminKey(
        c.var.scope.accountId,
        deps.box.seal(key, { purpose: 'provider-admin-key', row: c.var.scope.accountId }),
        hint,
      );
      return c.json({ provider_admin_key_hint: hint });
    },
  );

  app.delete(
    '/provider_admin_key',
    operation({ tag, summary: 'Forget the provider Admin API key' }),
    async (c) => {
      await deps.store.reconciliations.setAdminKey(c.var.scope.accountId, null, null);
      return c.json({ provider_admin_key_hint: null });
    },
  );

  app.post(
    '/reconciliation',
    operation({
      tag,
      summary:
        "Compare the provider's usage and cost reports with Keygate's, per UTC day and model (default: yesterday)",
      body: Run,
      optionalBody: true,
      status: 201,
    }),
    async (c) => {
      const body = c.req.valid('json') ?? {};
      if (!deps.upstreamUrl)
        throw new GatewayError('api_error', 'Reconciliation is not set up on this gateway.');
      if (!(await deps.store.reconciliations.adminKey(c.var.scope.accountId)))
        throw new GatewayError(
          'invalid_request_error',
          'No provider Admin API key: PUT /v1/organizations/provider_admin_key first.',
        );
      const today = Math.floor(deps.clock() / DAY) * DAY;
      const from = body.starting_at ?? new Date(today - DAY);
      const to = body.ending_at ?? new Date(from.getTime() + DAY);
      if (to <= from || to.getTime() - from.getTime() > 31 * DAY)
        throw new GatewayError(
          'invalid_request_error',
          'ending_at: after starting_at, and at most 31 days later.',
        );
      let record: ReconciliationRecord;
      try {
        record = await reconcile({ ...deps, upstreamUrl: deps.upstreamUrl }, c.var.scope.accountId, from, to);
      } catch (error) {
        throw new GatewayError(
          'api_error',
          `The provider's reports could not be read: ${(error as Error).message}`,
        );
      }
      return c.json(json(record), 201);
    },
  );

  app.get(
    '/reconciliation',
    operation({ tag, summary: 'The latest reconciliation with the provider' }),
    async (c) => {
      const r = await deps.store.reconciliations.latest(c.var.scope.accountId);
      if (!r) throw new GatewayError('not_found_error', 'No reconciliation has run for this account yet.');
      return c.json(json(r));
    },
  );
  return app;
}
