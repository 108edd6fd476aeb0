import { GatewayError } from '../lib/errors';

/**
 * The cloud model ids a front takes, as the provider's. Read 2026-11-29:
 * - Bedrock names Claude models `anthropic.{provider id}-v{n}:{m}`, and cross-region inference
 *   profiles prefix a geography (`us.`, `eu.`, `apac.`, `global.`…)
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html,
 *   https://code.claude.com/docs/en/amazon-bedrock). The reverse of the `anthropic.{model}` ids
 *   of Bedrock's Messages endpoint (upstreams/kinds.ts), with the version suffix dropped too.
 * - Vertex AI names them `{model}@{date}` (`claude-sonnet-4-5@20250929`), and one older model
 *   `claude-3-5-sonnet-v2@20241022` for the provider's `claude-3-5-sonnet-20241022`
 *   (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude).
 * - A model may also be named by ARN: a foundation model's or a system-defined (cross-region)
 *   inference profile's ARN ends in the Bedrock id (`arn:aws:bedrock:us-east-1:123456789012:
 *   inference-profile/us.anthropic.claude-…-v1:0`, `arn:aws:bedrock:us-west-2::foundation-model/
 *   anthropic.claude-…`), the pattern AWS gives for an inference profile's model source
 *   (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-bedrock-applicationinferenceprofile-inferenceprofilemodelsource.html).
 * An application inference profile's ARN names no model (its id is random): it is refused with
 * what to send instead.
 */
const PROVIDER_ID = /^claude-[a-z0-9][a-z0-9.-]{0,120}$/;
const BEDROCK_ID = /^(?:[a-z]{2,8}\.)?anthropic\.(claude-[a-z0-9.-]+?)(?:-v\d+(?::\d+)?)?$/;
// arn:{partition}:bedrock:{region}:{account, or none}:{inference-profile|foundation-model}/{Bedrock id}
const BEDROCK_ARN =
  /^arn:aws(?:-[a-z-]{1,10})?:bedrock:[0-9a-z-]{0,20}:(?:\d{12})?:(?:inference-profile|foundation-model)\/(.+)$/;
const VERTEX_ID = /^(claude-[a-z0-9.-]+?)(?:-v\d+)?@(\d{8})$/;

/** The provider's id of a Bedrock model id (`us.anthropic.claude-haiku-4-5-20251001-v1:0` → `claude-haiku-4-5-20251001`). */
export function fromBedrock(id: string): string {
  const m = BEDROCK_ID.exec(BEDROCK_ARN.exec(id)?.[1] ?? id);
  if (m && PROVIDER_ID.test(m[1]!)) return m[1]!;
  throw unknownModel(
    id,
    'a Bedrock model id such as `anthropic.claude-haiku-4-5-20251001-v1:0`, or the ARN of a foundation model or a cross-region inference profile (application inference profiles name no model)',
  );
}

/** The provider's id of a Vertex AI model id (`claude-haiku-4-5@20251001` → `claude-haiku-4-5-20251001`). */
export function fromVertex(id: string): string {
  const m = VERTEX_ID.exec(id);
  if (m) return `${m[1]}-${m[2]}`;
  if (PROVIDER_ID.test(id)) return id;
  throw unknownModel(id, 'a Vertex AI model id such as `claude-haiku-4-5@20251001`');
}

function unknownModel(id: string, expected: string): GatewayError {
  const shown = /^[\x20-\x7e]{1,256}$/.test(id) ? `\`${id}\`` : 'the model in the path';
  return new GatewayError(
    'invalid_request_error',
    `${shown} is not a Claude model id Keygate can map: send ${expected}.`,
  );
}
