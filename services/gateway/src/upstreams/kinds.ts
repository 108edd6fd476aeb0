/**
 * The clouds that serve the provider's Messages API in its own wire format, and what each needs
 * from a call. Read 2026-11-29:
 * - Claude Platform on AWS: `https://aws-external-anthropic.{region}.api.aws/v1/messages`, SigV4
 *   (service `aws-external-anthropic`) or a workspace API key, and an `anthropic-workspace-id`
 *   header on every request; "the same models and features as the Claude API"
 *   (https://docs.aws.amazon.com/claude-platform/latest/userguide/making-requests.md,
 *   https://code.claude.com/docs/en/claude-platform-on-aws).
 * - Bedrock's Anthropic-format Messages endpoint ("Mantle"):
 *   `https://bedrock-mantle.{region}.api.aws/anthropic/v1/messages`, a Bedrock API key as Bearer
 *   (or SigV4); model ids as `anthropic.{model}`, without Bedrock's version suffix
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/inference-messages-api.html,
 *   https://docs.getbifrost.ai/providers/supported-providers/bedrock-mantle).
 * - Claude models on Google Cloud, operated by Anthropic: the `claude.googleapis.com` service
 *   with a Google access token as Bearer
 *   (https://platform.claude.com/docs/en/build-with-claude/claude-models-on-google-cloud/anthropic-managed).
 * - Microsoft Foundry: `https://{resource}.services.ai.azure.com/anthropic/v1/messages`, its API
 *   key as x-api-key or an Entra ID token as Bearer
 *   (https://platform.claude.com/docs/en/build-with-claude/claude-in-microsoft-foundry).
 * Which betas and fields each refuses changes with each release and is not published as a list:
 * each upstream carries its own `refused_betas` and `refused_fields`, set by the account.
 */
export const KINDS = ['anthropic', 'aws', 'bedrock', 'google', 'foundry'] as const;
export type UpstreamKind = (typeof KINDS)[number];

export const AUTHS = ['x-api-key', 'bearer', 'sigv4', 'google-service-account'] as const;
export type UpstreamAuth = (typeof AUTHS)[number];

/**
 * The endpoint families a call may take to an upstream. Messages includes count_tokens and models.
 * Claude Platform on AWS serves "the same models and features as the Claude API" (its pages
 * above); Bedrock's Messages endpoint, Anthropic-operated Google Cloud and Foundry document the
 * Messages API only, so files and batches never go to them until a source says they serve them.
 */
export const FAMILIES = ['messages', 'files', 'batches'] as const;
export type EndpointFamily = (typeof FAMILIES)[number];
const ALL = FAMILIES;
const MESSAGES_ONLY = ['messages'] as const;

interface KindRules {
  label: string;
  /** The endpoint families this cloud serves. */
  serves: readonly EndpointFamily[];
  /** The ways this cloud takes a credential. */
  auths: readonly UpstreamAuth[];
  /** The SigV4 service name, for the kinds that take SigV4. */
  service?: string;
  /** Claude Platform on AWS refuses a request without its workspace header. */
  needsWorkspace?: boolean;
  needsRegion?: boolean;
}

export const RULES: Record<UpstreamKind, KindRules> = {
  anthropic: { label: "the provider's API", serves: ALL, auths: ['x-api-key', 'bearer'] },
  aws: {
    label: 'Claude Platform on AWS',
    serves: ALL,
    auths: ['sigv4', 'bearer', 'x-api-key'],
    service: 'aws-external-anthropic',
    needsWorkspace: true,
    needsRegion: true,
  },
  bedrock: {
    label: "Bedrock's Messages endpoint",
    serves: MESSAGES_ONLY,
    auths: ['bearer', 'sigv4'],
    // The SigV4 service of bedrock-mantle endpoints, after their host name (an assumption the
    // AWS pages above do not spell out; Bedrock API keys as Bearer are documented).
    service: 'bedrock-mantle',
    needsRegion: true,
  },
  // A static access token as Bearer, or a service-account JSON key the gateway mints tokens from
  // (google-token.ts).
  google: {
    label: 'Claude on Google Cloud (Anthropic-operated)',
    serves: MESSAGES_ONLY,
    auths: ['google-service-account', 'bearer'],
  },
  foundry: { label: 'Microsoft Foundry', serves: MESSAGES_ONLY, auths: ['x-api-key', 'bearer'] },
};

/** The family of a surface endpoint (`POST /v1/files`, `GET /v1/messages/batches/{id}`); null for others. */
export function familyOf(endpoint: string): EndpointFamily | null {
  const path = endpoint.slice(endpoint.indexOf(' ') + 1);
  if (path === '/v1/files' || path.startsWith('/v1/files/')) return 'files';
  if (path === '/v1/messages/batches' || path.startsWith('/v1/messages/batches/')) return 'batches';
  return null;
}

/** SigV4 credentials as `keygate upstream add` takes them: `ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]`. */
export function awsCredentials(
  credential: string,
): { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null {
  const [accessKeyId, secretAccessKey, ...rest] = credential.split(':');
  if (!accessKeyId || !secretAccessKey) return null;
  const sessionToken = rest.join(':');
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey };
}

/** What the account API and logs may show of a credential: its last four characters. */
export function credentialHint(credential: string): string {
  return `…${credential.slice(-4)}`;
}
