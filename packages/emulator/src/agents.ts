import { EmulatorError, invalid, jsonBody } from './errors';
import { jsonHeaders, sendJson, type Exchange } from './http';
import { randomBase62 } from './ids';
import { page } from './files';
import type { Json } from './types';

/**
 * Managed Agents' agents (`/v1/agents`: create, list, retrieve, archive) and environments
 * (`/v1/environments`: create, list, retrieve, archive, delete), beta `managed-agents-2026-04-01`,
 * minimal: the fields of the official TypeScript SDK 1.11's `BetaManagedAgentsAgent` and
 * `BetaEnvironment` types (read 2026-11-25), no versions, no updates. A session names its agent
 * by id; the session keeps a snapshot of it (its model prices the session's usage).
 */
type Obj = Json & { id: string };

export class AgentStore {
  readonly agents = new Map<string, Obj>();
  readonly environments = new Map<string, Obj>();

  agent(id: string): Obj {
    const agent = this.agents.get(id);
    if (!agent) throw new EmulatorError('not_found_error', `Agent not found: ${id}`);
    return agent;
  }

  environment(id: string): Obj {
    const env = this.environments.get(id);
    if (!env) throw new EmulatorError('not_found_error', `Environment not found: ${id}`);
    return env;
  }

  createAgent(body: Json): Obj {
    if (typeof body.name !== 'string' || body.name === '') throw invalid('name: Field required');
    const model =
      typeof body.model === 'string'
        ? { id: body.model }
        : typeof (body.model as Json | null)?.id === 'string'
          ? body.model
          : null;
    if (!model) throw invalid('model: Field required');
    const now = new Date().toISOString();
    const agent: Obj = {
      type: 'agent',
      id: `agent_011${randomBase62(21)}`,
      name: body.name,
      description: typeof body.description === 'string' ? body.description : null,
      model,
      system: typeof body.system === 'string' ? body.system : null,
      tools: Array.isArray(body.tools) ? body.tools : [],
      mcp_servers: [],
      skills: [],
      metadata: body.metadata ?? {},
      multiagent: null,
      version: 1,
      created_at: now,
      updated_at: now,
      archived_at: null,
    };
    this.agents.set(agent.id, agent);
    return agent;
  }

  createEnvironment(body: Json): Obj {
    if (typeof body.name !== 'string' || body.name === '') throw invalid('name: Field required');
    const now = new Date().toISOString();
    const env: Obj = {
      type: 'environment',
      id: `env_011${randomBase62(21)}`,
      name: body.name,
      description: typeof body.description === 'string' ? body.description : null,
      config: body.config ?? { type: 'cloud', networking: { type: 'unrestricted' }, packages: {} },
      metadata: body.metadata ?? {},
      created_at: now,
      updated_at: now,
      archived_at: null,
    };
    this.environments.set(env.id, env);
    return env;
  }
}

/** Routes `/v1/agents…` and `/v1/environments…`; false for other paths. */
export function handleAgents(
  ex: Exchange,
  store: AgentStore,
  path: string,
  query: URLSearchParams,
  body: Buffer | null,
): boolean {
  const m = /^\/v1\/(agents|environments)(?:\/([^/]+)(\/archive)?)?$/.exec(path);
  if (!m) return false;
  const [, family, id, archive] = m;
  const agents = family === 'agents';
  const method = ex.req.method;
  const json = (value: unknown) => sendJson(ex, 200, JSON.stringify(value), jsonHeaders(ex.requestId, false));
  const parsed = () => jsonBody(body);
  const map = agents ? store.agents : store.environments;
  const one = (id: string) => (agents ? store.agent(id) : store.environment(id));
  if (!id && method === 'POST')
    json(agents ? store.createAgent(parsed()) : store.createEnvironment(parsed()));
  else if (!id && method === 'GET') json(page([...map.values()], query));
  else if (id && !archive && method === 'GET') json(one(id));
  else if (id && archive && method === 'POST') {
    const obj = one(id);
    obj.archived_at ??= new Date().toISOString();
    json(obj);
  } else if (id && !archive && method === 'DELETE' && !agents) {
    one(id);
    map.delete(id);
    json({ id, type: 'environment_deleted' });
  } else throw new EmulatorError('not_found_error', `Not found: ${method} ${path}`);
  return true;
}
