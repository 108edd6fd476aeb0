import { newId, randomBase62 } from '../lib/ids';
import type { SecretBox } from '../lib/secret-box';
import type { Store, WebhookEndpointRecord } from '../store';

export interface NewEndpointInput {
  url: string;
  events: string[];
  description: string | null;
  errorRate: { threshold: number; windowSeconds: number; minCalls: number } | null;
}

/** Registers a webhook endpoint with a fresh signing secret, returned this once (stored sealed). */
export async function createEndpoint(
  deps: { store: Store; box: SecretBox },
  who: { accountId: string; actor: string },
  input: NewEndpointInput,
): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  const secret = `whsec_${randomBase62(32)}`;
  const id = newId('whk');
  const endpoint = await deps.store.alerts.createEndpoint(
    {
      id,
      accountId: who.accountId,
      url: input.url,
      description: input.description,
      events: input.events,
      status: 'active',
      errorRateThreshold: input.errorRate?.threshold ?? null,
      errorRateWindowSeconds: input.errorRate?.windowSeconds ?? null,
      errorRateMinCalls: input.errorRate?.minCalls ?? 10,
      createdBy: who.actor,
      secretSealed: deps.box.seal(secret),
    },
    { actor: who.actor, action: 'webhook.create', targetId: id, details: { events: input.events } },
  );
  return { endpoint, secret };
}
