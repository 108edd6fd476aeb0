import type { AccountStore, WebhookRules } from '../accounts/service';
import { EGRESS_BLOCKED, EgressBlockedError, EgressPolicy } from '../lib/egress';
import { GatewayError } from '../lib/errors';
import { newId, randomBase62 } from '../lib/ids';
import type { SecretBox } from '../lib/secret-box';
import { EndpointLimitError, type WebhookEndpointRecord } from '../budgets/alert-queries';

export interface NewEndpointInput {
  url: string;
  events: string[];
  description: string | null;
  errorRate: { threshold: number; windowSeconds: number; minCalls: number } | null;
}

const STRICT: WebhookRules = { egress: new EgressPolicy(), maxEndpoints: 20 };

/** Refuses a URL the egress policy would refuse at delivery, before it is stored. */
export async function checkEndpointUrl(rules: WebhookRules | undefined, url: string): Promise<void> {
  try {
    await (rules ?? STRICT).egress.check(url);
  } catch (err) {
    if (err instanceof EgressBlockedError)
      throw new GatewayError('invalid_request_error', `url: ${EGRESS_BLOCKED}.`);
    throw err;
  }
}

/** Registers a webhook endpoint with a fresh signing secret, returned this once (stored sealed). */
export async function createEndpoint(
  deps: { store: AccountStore; box: SecretBox; webhooks?: WebhookRules },
  who: { accountId: string; actor: string },
  input: NewEndpointInput,
): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  await checkEndpointUrl(deps.webhooks, input.url);
  const secret = `whsec_${randomBase62(32)}`;
  const id = newId('whk');
  try {
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
        secretSealed: deps.box.seal(secret, { purpose: 'webhook-secret', row: id }),
      },
      { actor: who.actor, action: 'webhook.create', targetId: id, details: { events: input.events } },
      (deps.webhooks ?? STRICT).maxEndpoints,
    );
    return { endpoint, secret };
  } catch (err) {
    if (err instanceof EndpointLimitError)
      throw new GatewayError(
        'invalid_request_error',
        `This account has ${err.max} webhook endpoints, the most it may have; delete one first.`,
      );
    throw err;
  }
}
