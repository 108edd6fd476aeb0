import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import type { AccountStore, WebhookRules } from '../accounts/service';
import { checkEndpointUrl } from '../alerts/endpoints';
import { operation } from '../lib/operation';
import type { OtlpRelay } from '../otlp/relay';
import { endpointUrl } from './webhook-routes';

const SetRelay = z.strictObject({ url: endpointUrl });

/**
 * Where the account's received Claude Code telemetry is relayed: its own OpenTelemetry
 * collector's OTLP/HTTP base URL (`/v1/metrics` and `/v1/logs` are added). The URL passes the
 * same egress policy as webhooks, when set and again at every connection.
 */
export interface RelayRouteDeps {
  store: AccountStore;
  webhooks?: WebhookRules;
  /** This instance's relay, told at once; others read the change within their cache's 30 s. */
  otlpRelay?: Pick<OtlpRelay, 'forget'> | null;
}

export function otlpRelayRoutes(deps: RelayRouteDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Claude Code telemetry';
  const json = (url: string | null) => ({ type: 'otlp_relay' as const, url });
  app.get(
    '/otlp_relay',
    operation({ tag, summary: 'Where received Claude Code telemetry is relayed' }),
    async (c) => c.json(json(await deps.store.telemetry.relay(c.var.scope.accountId))),
  );
  app.post(
    '/otlp_relay',
    operation({
      tag,
      summary: "Relay received Claude Code telemetry to the account's own collector",
      body: SetRelay,
    }),
    async (c) => {
      const { url } = c.req.valid('json');
      await checkEndpointUrl(deps.webhooks, url);
      await deps.store.telemetry.setRelay(c.var.scope.accountId, url);
      deps.otlpRelay?.forget(c.var.scope.accountId);
      return c.json(json(url));
    },
  );
  app.delete('/otlp_relay', operation({ tag, summary: 'Stop relaying Claude Code telemetry' }), async (c) => {
    await deps.store.telemetry.setRelay(c.var.scope.accountId, null);
    deps.otlpRelay?.forget(c.var.scope.accountId);
    return c.json(json(null));
  });
  return app;
}
