import { Hono, type Context } from 'hono';
import { performance } from 'node:perf_hooks';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { GatewayError, knownError } from '../lib/errors';
import { proxyCall, type Endpoint, type ProxyOptions } from '../proxy/routes';
import { bedrockResponse, exceptionOf } from './bedrock-answer';
import { fromBedrock, fromVertex } from './model-ids';
import { messagesBody, type FrontCall } from './request';

/**
 * Where teams already on Claude Code's Bedrock or Vertex mode point it (read 2026-11-29,
 * https://code.claude.com/docs/en/llm-gateway): `ANTHROPIC_BEDROCK_BASE_URL=<keygate>/bedrock`
 * with `CLAUDE_CODE_SKIP_BEDROCK_AUTH=1`, `ANTHROPIC_VERTEX_BASE_URL=<keygate>/vertex/v1` with
 * `CLAUDE_CODE_SKIP_VERTEX_AUTH=1`. Below them, the clouds' own paths:
 * - Bedrock runtime `POST /model/{modelId}/invoke` and `/model/{modelId}/invoke-with-response-stream`
 *   (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html,
 *   https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).
 * - Vertex AI `POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict`
 *   and `:streamRawPredict`, and `models/count-tokens:rawPredict`
 *   (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude).
 * Each call goes through the messages pipeline as a Messages call: same admission, model
 * policy, limits, upstreams and call log; the project, location and AWS region are not used.
 */
export const BEDROCK_BASE = '/bedrock';
export const VERTEX_BASE = '/vertex/v1';
export const VERTEX_MODEL = '/projects/:project/locations/:location/publishers/anthropic/models/:model';

export function cloudFrontRoutes(opts: ProxyOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth<AppEnv>(opts.resolver, ['live', 'test']);
  const bedrock = new Hono<AppEnv>();
  // The SDKs read Bedrock's error shape here; Vertex answers the provider's own for Claude.
  bedrock.onError(bedrockErrorAnswer);
  bedrock.post('/model/:model_id/invoke', auth, (c) => invoke(c, false, opts));
  bedrock.post('/model/:model_id/invoke-with-response-stream', auth, (c) => invoke(c, true, opts));
  app.route(BEDROCK_BASE, bedrock);
  app.post(VERTEX_BASE + VERTEX_MODEL, auth, (c) => rawPredict(c, opts));
  return app;
}

function invoke(c: Context<AppEnv>, stream: boolean, opts: ProxyOptions): Promise<Response> {
  const id = c.req.param('model_id') ?? '';
  return serve(c, 'messages', opts, { model: () => fromBedrock(id), stream, betasInBody: true }, true);
}

const VERTEX_METHOD = /^(.+):(rawPredict|streamRawPredict)$/;

function rawPredict(c: Context<AppEnv>, opts: ProxyOptions): Promise<Response> {
  const m = VERTEX_METHOD.exec(c.req.param('model') ?? '');
  const counts = m?.[1] === 'count-tokens' && m[2] === 'rawPredict';
  const front: FrontCall = {
    model(inBody) {
      if (!m)
        throw new GatewayError(
          'not_found_error',
          'Not found: a Vertex AI path ends in `{model}:rawPredict` or `:streamRawPredict`.',
        );
      // count-tokens names its model in the body, as Vertex AI's own takes it.
      return fromVertex(counts ? String(inBody ?? '') : m[1]!);
    },
    stream: null,
    betasInBody: false,
  };
  return serve(c, counts ? 'count_tokens' : 'messages', opts, front, false);
}

function serve(
  c: Context<AppEnv>,
  endpoint: Endpoint,
  opts: ProxyOptions,
  front: FrontCall,
  bedrock: boolean,
): Promise<Response> {
  const { incoming: req, outgoing: res } = c.env;
  if (!req || !res) throw new Error('the cloud fronts need @hono/node-server bindings');
  const startedAt = c.var.startedAt ?? performance.now();
  return proxyCall(
    req,
    bedrock ? bedrockResponse(res) : res,
    c.var.principal,
    c.var.requestId,
    startedAt,
    endpoint,
    undefined,
    opts,
    { body: (raw) => messagesBody(raw, req.headers, front) },
  );
}

/** A refusal as Bedrock answers one: `{"message"}` and `x-amzn-ErrorType`, Keygate's status and request id. */
function bedrockErrorAnswer(err: Error, c: Context<AppEnv>): Response {
  let known = knownError(err);
  if (!known) {
    c.var.logger?.error('unhandled error', { error: err, stack: err.stack });
    known = new GatewayError('api_error', 'Internal server error.');
  }
  return new Response(JSON.stringify({ message: known.message }), {
    status: known.status,
    headers: {
      'content-type': 'application/json',
      'request-id': c.var.requestId,
      'x-amzn-requestid': c.var.requestId,
      'x-amzn-errortype': exceptionOf(known.type),
      ...known.headers,
    },
  });
}
