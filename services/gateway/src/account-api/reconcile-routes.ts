import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { ADMIN_KEY_PATTERN, reconcileOnDemand, saveAdminKey, type ReconcileDeps } from '../billing/reconcile';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import { timestamp } from '../reports/query';
import type { ReconciliationRecord } from '../billing/reconciliation-queries';

const AdminKey = z.strictObject({
  admin_key: z.string().regex(ADMIN_KEY_PATTERN, "must be a provider Admin API key ('sk-ant-admin01-…')"),
});
const Run = z.strictObject({ starting_at: timestamp.optional(), ending_at: timestamp.optional() });

export const reconciliationJson = (r: ReconciliationRecord) => ({
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
export function reconcileRoutes(
  deps: Omit<ReconcileDeps, 'upstreamUrl'> & { upstreamUrl?: string | undefined; clock: () => number },
): Hono<AdminEnv> {
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
      const hint = await saveAdminKey(deps, c.var.scope.accountId, c.req.valid('json').admin_key);
      return c.json({ provider_admin_key_hint: hint });
    },
  );

  app.delete(
    '/provider_admin_key',
    operation({ tag, summary: 'Forget the provider Admin API key' }),
    async (c) => {
      await saveAdminKey(deps, c.var.scope.accountId, null);
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
      const record = await reconcileOnDemand(deps, c.var.scope.accountId, {
        from: body.starting_at,
        to: body.ending_at,
      });
      return c.json(reconciliationJson(record), 201);
    },
  );

  app.get(
    '/reconciliation',
    operation({ tag, summary: 'The latest reconciliation with the provider' }),
    async (c) => {
      const r = await deps.store.reconciliations.latest(c.var.scope.accountId);
      if (!r) throw new GatewayError('not_found_error', 'No reconciliation has run for this account yet.');
      return c.json(reconciliationJson(r));
    },
  );
  return app;
}
