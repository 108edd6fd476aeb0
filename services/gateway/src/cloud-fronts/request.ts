import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../lib/errors';
import { parseJson } from '../pipeline/body-reader';

/**
 * How a front's body differs from a Messages body, read 2026-11-29:
 * - Bedrock InvokeModel (`POST /model/{modelId}/invoke`, `/invoke-with-response-stream`): no
 *   `model` and no `stream` in the body (the path says both), `anthropic_version:
 *   "bedrock-2023-05-31"` in the body, betas as an `anthropic_beta` array in the body
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html,
 *   https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html; the
 *   official @anthropic-ai/bedrock-sdk 1.1.3 `#adaptRequest` writes exactly this).
 * - Vertex AI rawPredict / streamRawPredict: no `model` (the path says it), `stream` kept in the
 *   body, `anthropic_version: "vertex-2023-10-16"` in the body, betas stay in the
 *   `anthropic-beta` header
 *   (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude;
 *   @anthropic-ai/vertex-sdk 1.1.3 `#adaptRequest`).
 * The Messages API takes its version as a header, so `anthropic_version` is dropped (the upstream
 * request carries the default `anthropic-version`).
 */
export interface FrontCall {
  /** The provider's model id, from the path (or, for Vertex's count-tokens, the body's `model`). */
  model(inBody: unknown): string;
  /** Bedrock: the path says whether it streams; Vertex: the body does (null). */
  stream: boolean | null;
  /** Bedrock: `anthropic_beta` in the body becomes the `anthropic-beta` header. */
  betasInBody: boolean;
}

/** The Messages body of a front's body; the request's headers receive its betas (Bedrock). */
export async function messagesBody(
  raw: Buffer,
  headers: IncomingHttpHeaders,
  call: FrontCall,
): Promise<Buffer> {
  // The one reader's parse: bounded (depth, values) before JSON.parse sees it.
  const json = await parseJson(raw);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new GatewayError('invalid_request_error', 'The request body must be a JSON object.');
  const body = json as Record<string, unknown>;
  delete body.anthropic_version;
  if (call.betasInBody && 'anthropic_beta' in body) {
    const betas = body.anthropic_beta;
    delete body.anthropic_beta;
    if (!Array.isArray(betas) || !betas.every((b) => typeof b === 'string' && /^[\x21-\x7e]{1,128}$/.test(b)))
      throw new GatewayError('invalid_request_error', 'anthropic_beta: must be a list of beta names.');
    if (betas.length > 0) headers['anthropic-beta'] = betas.join(',');
  }
  const model = call.model(body.model);
  const out: Record<string, unknown> = { model, ...body };
  out.model = model;
  if (call.stream !== null) {
    if (call.stream) out.stream = true;
    else delete out.stream;
  }
  return Buffer.from(JSON.stringify(out));
}
