import { forcedSplit, type ForcedCache, type PromptCache } from './cache';
import { clientGone, jsonHeaders, sendJson, sseHeaders, type Exchange } from './http';
import { messageJson, planReply } from './reply';
import type { Scenario } from './scenarios';
import { writeStream } from './stream-writer';
import { measure } from './tokens';
import { apiVersionOf, betasOf, parseJson, validateMessages } from './validate';

/** `POST /v1/messages`: a JSON message, or its events when `stream: true`. */
export function handleMessages(ex: Exchange, raw: Buffer, scenario: Scenario, cache: PromptCache): void {
  const { headers } = ex.req;
  const body = validateMessages(
    parseJson(raw),
    'messages',
    betasOf(headers['anthropic-beta']),
    apiVersionOf(headers['anthropic-version']),
  );
  const entry = ex.entry!;
  entry.model = body.model;
  entry.stream = body.stream === true;
  const measurement = measure(body);
  const forced = forcedCacheOf(scenario);
  const split = forced ? forcedSplit(measurement.total, forced) : cache.split(body, measurement);
  const plan = planReply(body, scenario, split);
  entry.messageId = plan.id;
  if (ex.res.destroyed) return clientGone(ex);
  if (body.stream === true) {
    writeStream(ex.res, sseHeaders(ex.requestId), plan, scenario, entry, ex.ledger);
    return;
  }
  entry.usage = plan.usage;
  sendJson(ex, 200, messageJson(plan), jsonHeaders(ex.requestId, true));
}

/** `POST /v1/messages/count_tokens`: the same rule, no cache split. */
export function handleCountTokens(ex: Exchange, raw: Buffer): void {
  const { headers } = ex.req;
  const body = validateMessages(
    parseJson(raw),
    'count_tokens',
    betasOf(headers['anthropic-beta']),
    apiVersionOf(headers['anthropic-version']),
  );
  ex.entry!.model = body.model;
  const { total } = measure(body);
  sendJson(ex, 200, `{"input_tokens":${total}}`, jsonHeaders(ex.requestId, false));
}

function forcedCacheOf(scenario: Scenario): ForcedCache | null {
  if (scenario.has.size === 0) return null;
  if (scenario.has.has('cache_read')) return 'cache_read';
  if (scenario.has.has('cache_write_1h')) return 'cache_write_1h';
  if (scenario.has.has('cache_write_5m')) return 'cache_write_5m';
  return null;
}
