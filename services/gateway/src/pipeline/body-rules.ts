/** The provider objects Keygate records an owner for. */
export type ObjectKind = 'file' | 'batch' | 'skill' | 'session' | 'agent' | 'environment';
/** What a request body may name: the objects Keygate attributes, and vaults (never made through Keygate). */
export type RefKind = ObjectKind | 'vault';

/**
 * A field of a request body: keys joined by `.`, `[]` for each item of a list
 * (`requests[].params.model`). A field names something only where its value is a string.
 */
export type Field = string;

/** A field that names an object the caller must be able to see, as a direct GET of it would. */
export interface RefField {
  at: Field;
  kind: RefKind;
  /** Items whose `type` is this name something shared by everyone (the provider's own skills). */
  unlessType?: string;
}

/** What Keygate checks in one endpoint's body before the provider sees it. */
export interface BodyRules {
  /** Fields naming a model, each held to the caller's model policy (lib/model-policy.ts). */
  models: readonly Field[];
  /** Fields naming an object; every `file_id`, wherever it sits, is one too (file-refs.ts). */
  refs: readonly RefField[];
}

/** A model named as a string, or as a configuration object (`{id, speed}`). */
const model = (at: string): Field[] => [at, `${at}.id`];
/** An object named by its id, or by a reference object (`{type: 'agent', id, version}`). */
const ref = (at: string, kind: RefKind): RefField[] => [
  { at, kind },
  { at: `${at}.id`, kind },
];
/** Skills named in a list: the account's own (`custom`) by id; the provider's (`anthropic`) are everyone's. */
const skills = (at: string): RefField => ({ at: `${at}[].skill_id`, kind: 'skill', unlessType: 'anthropic' });

const MESSAGE: BodyRules = { models: ['model'], refs: [skills('container.skills')] };
const FRONT: BodyRules = { models: [], refs: MESSAGE.refs };

// Managed Agents, beta `managed-agents-2026-04-01`: fields as the official TypeScript SDK 1.11's
// AgentCreateParams, AgentUpdateParams, SessionCreateParams and SessionUpdateParams name them (read 2026-11-29).
const AGENT: BodyRules = {
  models: [...model('model'), 'multiagent.agents[].model', 'multiagent.advisor.model'],
  refs: [
    skills('skills'),
    ...ref('multiagent.agents[]', 'agent'),
    ...ref('multiagent.subagents.predefined_agents[]', 'agent'),
    ...ref('multiagent.workflows.predefined_agents[]', 'agent'),
  ],
};

// What a session or a deployment runs on: an agent, an environment, the account's vaults.
const RUNS_ON: RefField[] = [
  ...ref('agent', 'agent'),
  { at: 'environment_id', kind: 'environment' },
  { at: 'vault_ids[]', kind: 'vault' },
];

const DEPLOYMENT: BodyRules = { models: [], refs: RUNS_ON };

/**
 * The model and reference fields of each endpoint, by method and path template (call.ts's
 * `pathTemplate`). A new endpoint declares its fields here; one without an entry is still
 * checked for `file_id`s.
 */
export const BODY_RULES: Readonly<Record<string, BodyRules>> = {
  'POST /v1/messages': MESSAGE,
  'POST /v1/messages/count_tokens': MESSAGE,
  // The cloud fronts (cloud-fronts/): a Messages body whose model is in the path, not the body.
  'POST /bedrock/model/{model_id}/invoke': FRONT,
  'POST /bedrock/model/{model_id}/invoke-with-response-stream': FRONT,
  'POST /vertex/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}': FRONT,
  'POST /v1/messages/batches': {
    models: ['requests[].params.model'],
    refs: [skills('requests[].params.container.skills')],
  },
  'POST /v1/agents': AGENT,
  'POST /v1/agents/{id}': AGENT,
  'POST /v1/sessions': {
    models: model('agent.model'),
    refs: [...RUNS_ON, skills('agent.skills')],
  },
  'POST /v1/sessions/{id}': { models: [], refs: [{ at: 'vault_ids[]', kind: 'vault' }] },
  // Through the open passthrough (Keygate does not own them): a deployment runs an agent on a
  // schedule, a dream runs a model (SDK 1.11's DeploymentCreateParams, DreamCreateParams).
  'POST /v1/deployments': DEPLOYMENT,
  'POST /v1/deployments/{id}': DEPLOYMENT,
  'POST /v1/dreams': { models: model('model'), refs: [] },
};

// An endpoint Keygate does not know yet (the open passthrough): a top-level `model` is still a model.
const UNKNOWN: BodyRules = { models: model('model'), refs: [] };

export const rulesFor = (endpoint: string): BodyRules => BODY_RULES[endpoint] ?? UNKNOWN;

/** A string found at a field: where exactly (`requests[2].params.model`) and the object holding it. */
export interface Found {
  value: string;
  where: string;
  holder: Record<string, unknown>;
}

/** The strings at `field` in `body`. */
export function valuesAt(body: unknown, field: Field): Found[] {
  const out: Found[] = [];
  const keys = field.split('.');
  const walk = (value: unknown, i: number, where: string, holder: Record<string, unknown>): void => {
    if (i === keys.length) {
      if (typeof value === 'string') out.push({ value, where, holder });
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const key = keys[i]!;
    const list = key.endsWith('[]');
    const name = list ? key.slice(0, -2) : key;
    const next = (value as Record<string, unknown>)[name];
    const at = where ? `${where}.${name}` : name;
    if (!list) return walk(next, i + 1, at, value as Record<string, unknown>);
    if (!Array.isArray(next)) return;
    for (const [n, item] of next.entries())
      walk(item, i + 1, `${at}[${n}]`, value as Record<string, unknown>);
  };
  walk(body, 0, '', {});
  return out;
}
