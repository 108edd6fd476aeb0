import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import type { AccountStore, WebhookRules } from '../accounts/service';
import { checkEndpointUrl, createEndpoint } from '../alerts/endpoints';
import { ALERT_EVENT_TYPES } from '../alerts/events';
import { GatewayError } from '../lib/errors';
import type { SecretBox } from '../lib/secret-box';
import { operation } from '../lib/operation';
import { listJson, listParams, pageQuery } from '../reports/query';
import type { DeliveryRecord, WebhookEndpointPatch, WebhookEndpointRecord } from '../budgets/alert-queries';

export const endpointUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
  .max(2048);
export const endpointEvents = z
  .array(z.enum(ALERT_EVENT_TYPES))
  .min(1)
  .transform((e) => [...new Set(e)]);
const errorRate = z
  .strictObject({
    threshold_percent: z.number().gt(0).max(100),
    window_seconds: z.number().int().min(10).max(86_400).default(300),
    min_calls: z.number().int().min(1).max(1_000_000).default(10),
  })
  .nullable();
const description = z.string().trim().max(500).nullable();

const CreateEndpoint = z.strictObject({
  url: endpointUrl,
  events: endpointEvents,
  description: description.optional(),
  error_rate: errorRate.optional(),
});
const UpdateEndpoint = z
  .strictObject({
    url: endpointUrl.optional(),
    events: endpointEvents.optional(),
    description: description.optional(),
    error_rate: errorRate.optional(),
    status: z.enum(['active', 'disabled']).optional(),
  })
  .refine(
    (b) => Object.keys(b).length > 0,
    'Send at least one of url, events, description, error_rate and status.',
  );
const ListEndpoints = z.object(listParams);
const Deliveries = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) });

/** The endpoint as listed: never its secret. */
function endpointJson(e: WebhookEndpointRecord) {
  return {
    type: 'webhook_endpoint' as const,
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    status: e.status,
    error_rate:
      e.errorRateThreshold === null
        ? null
        : {
            threshold_percent: Math.round(e.errorRateThreshold * 1e6) / 1e4,
            window_seconds: e.errorRateWindowSeconds,
            min_calls: e.errorRateMinCalls,
          },
    created_at: e.createdAt.toISOString(),
  };
}

function deliveryJson(d: DeliveryRecord) {
  const iso = (t: Date | null) => t?.toISOString() ?? null;
  return {
    id: d.id,
    event_id: d.eventId,
    event_type: d.type,
    status: d.status,
    attempts: d.attempts,
    last_status: d.lastStatus,
    last_error: d.lastError,
    next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    delivered_at: iso(d.deliveredAt),
    created_at: iso(d.createdAt),
  };
}

function errorRatePatch(e: z.infer<typeof errorRate> | undefined): WebhookEndpointPatch {
  if (e === undefined) return {};
  if (e === null) return { errorRateThreshold: null, errorRateWindowSeconds: null };
  return {
    errorRateThreshold: e.threshold_percent / 100,
    errorRateWindowSeconds: e.window_seconds,
    errorRateMinCalls: e.min_calls,
  };
}

/** Webhook endpoints that receive the account's alerts, signed with a secret shown once at creation. */
export function webhookRoutes(deps: {
  store: AccountStore;
  box: SecretBox;
  webhooks?: WebhookRules;
}): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const notFound = (id: string) =>
    new GatewayError('not_found_error', `No webhook endpoint with id '${id}'.`);
  const tag = 'Webhooks';

  app.get(
    '/webhooks',
    operation({ tag, summary: 'List webhook endpoints (never their secrets)', query: ListEndpoints }),
    async (c) => {
      const q = c.req.valid('query');
      return c.json(
        listJson(await deps.store.alerts.listEndpoints(c.var.scope.accountId, pageQuery(q)), endpointJson),
      );
    },
  );

  const create = operation({
    tag,
    summary: 'Add a webhook endpoint for alert events; its signing secret is in this answer only',
    body: CreateEndpoint,
    status: 201,
  });
  app.post('/webhooks', create, async (c) => {
    const b = c.req.valid('json');
    const rate = b.error_rate
      ? {
          threshold: b.error_rate.threshold_percent / 100,
          windowSeconds: b.error_rate.window_seconds,
          minCalls: b.error_rate.min_calls,
        }
      : null;
    const { endpoint, secret } = await createEndpoint(deps, c.var.scope, {
      url: b.url,
      events: b.events,
      description: b.description ?? null,
      errorRate: rate,
    });
    // The only time the secret leaves the gateway.
    return c.json({ ...endpointJson(endpoint), secret }, 201);
  });

  app.get('/webhooks/:id', operation({ tag, summary: 'A webhook endpoint' }), async (c) => {
    const e = await deps.store.alerts.getEndpoint(c.var.scope.accountId, c.req.param('id'));
    if (!e) throw notFound(c.req.param('id'));
    return c.json(endpointJson(e));
  });

  const update = operation({
    tag,
    summary: "Change an endpoint's URL, events, description, error-rate alert or status",
    body: UpdateEndpoint,
  });
  app.post('/webhooks/:id', update, async (c) => {
    const b = c.req.valid('json');
    if (b.url !== undefined) await checkEndpointUrl(deps.webhooks, b.url);
    const patch: WebhookEndpointPatch = {
      ...errorRatePatch(b.error_rate),
      ...(b.url !== undefined && { url: b.url }),
      ...(b.events !== undefined && { events: b.events }),
      ...(b.description !== undefined && { description: b.description }),
      ...(b.status !== undefined && { status: b.status }),
    };
    const audit = {
      actor: c.var.scope.actor,
      action: 'webhook.update',
      targetId: c.req.param('id'),
      details: { fields: Object.keys(b) },
    };
    const e = await deps.store.alerts.updateEndpoint(c.var.scope.accountId, c.req.param('id'), patch, audit);
    if (!e) throw notFound(c.req.param('id'));
    return c.json(endpointJson(e));
  });

  app.delete('/webhooks/:id', operation({ tag, summary: 'Delete a webhook endpoint' }), async (c) => {
    const audit = { actor: c.var.scope.actor, action: 'webhook.delete', targetId: c.req.param('id') };
    const e = await deps.store.alerts.removeEndpoint(c.var.scope.accountId, c.req.param('id'), audit);
    if (!e) throw notFound(c.req.param('id'));
    return c.json({ id: e.id, type: 'webhook_endpoint_deleted' as const });
  });

  app.get(
    '/webhooks/:id/deliveries',
    operation({ tag, summary: "An endpoint's latest deliveries, newest first", query: Deliveries }),
    async (c) => {
      const q = c.req.valid('query');
      const e = await deps.store.alerts.getEndpoint(c.var.scope.accountId, c.req.param('id'));
      if (!e) throw notFound(c.req.param('id'));
      return c.json({ data: (await deps.store.alerts.deliveries(e.id, q.limit)).map(deliveryJson) });
    },
  );

  return app;
}
