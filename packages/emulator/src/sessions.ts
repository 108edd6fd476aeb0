import type { ServerResponse } from 'node:http';
import { EmulatorError, invalid, jsonBody } from './errors';
import { jsonHeaders, sendJson, sseHeaders, type Exchange } from './http';
import { randomBase62 } from './ids';
import { page } from './files';
import type { AgentStore } from './agents';
import type { Json } from './types';

/**
 * A minimal Managed Agents session (`/v1/sessions`, beta `managed-agents-2026-04-01`): create,
 * retrieve, list, delete, send events, and the event stream
 * (`GET /v1/sessions/{id}/events/stream`, server-sent events). Shapes from the official
 * TypeScript SDK 1.11's `resources/beta/sessions` types, read 2026-11-25. Each user message
 * gets a `session.status_running`, an `agent.message` echoing its words, a `session.usage`
 * snapshot (cumulative) and `session.status_idle`. The session object's `usage` holds the running
 * totals, in the provider's shape (input, output, cache reads, cache writes by lifetime:
 * https://platform.claude.com/docs/en/managed-agents/session-observability, read 2026-11-25).
 */
interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

interface Session {
  object: Json & { id: string; usage: Usage };
  events: Json[];
  listeners: Set<ServerResponse>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

export class SessionStore {
  readonly sessions = new Map<string, Session>();
  readonly #agents: AgentStore | null;

  constructor(agents: AgentStore | null = null) {
    this.#agents = agents;
  }

  get(id: string): Session {
    const s = this.sessions.get(id);
    if (!s) throw new EmulatorError('not_found_error', `Session not found: ${id}`);
    return s;
  }

  create(body: Json): Session {
    if (body.agent === undefined) throw invalid('agent: Field required');
    // An agent this emulator made is kept as a snapshot (its model prices the session's usage).
    const agentId = typeof body.agent === 'string' ? body.agent : (body.agent as Json | null)?.id;
    const known = typeof agentId === 'string' ? this.#agents?.agents.get(agentId) : undefined;
    const now = new Date().toISOString();
    const session: Session = {
      object: {
        type: 'session',
        id: `sesn_011${randomBase62(21)}`,
        agent: known ? { ...known } : body.agent,
        environment_id: body.environment_id ?? null,
        title: typeof body.title === 'string' ? body.title : null,
        status: 'idle',
        created_at: now,
        updated_at: now,
        metadata: body.metadata ?? {},
        vault_ids: [],
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        },
      },
      events: [],
      listeners: new Set(),
    };
    this.sessions.set(session.object.id, session);
    return session;
  }

  /** Takes user events; answers each user.message with the agent's events, sent to every stream. */
  send(session: Session, body: Json): Json[] {
    const events = body.events;
    if (!Array.isArray(events) || events.length === 0)
      throw invalid('events: List should have at least 1 item');
    const accepted: Json[] = [];
    for (const e of events as Json[]) {
      if (typeof e?.type !== 'string') throw invalid('events.type: Field required');
      const event = { ...e, id: `sevt_011${randomBase62(21)}`, processed_at: new Date().toISOString() };
      accepted.push(event);
      this.#emit(session, event);
      if (e.type !== 'user.message') continue;
      const text = ((e.content as Json[] | undefined) ?? []).map((b) => String(b.text ?? '')).join(' ');
      const usage = session.object.usage;
      usage.input_tokens += 10 + words(text);
      usage.output_tokens += 4 + words(text);
      this.#emit(session, { type: 'session.status_running' });
      this.#emit(session, {
        type: 'agent.message',
        content: [{ type: 'text', text: `Emulated agent reply to: ${text}` }],
      });
      this.#emit(session, { type: 'session.usage', usage: structuredClone(usage) });
      this.#emit(session, { type: 'session.status_idle', stop_reason: { type: 'end_turn' } });
    }
    return accepted;
  }

  #emit(session: Session, e: Json): void {
    const event: Json = { id: `sevt_011${randomBase62(21)}`, processed_at: new Date().toISOString(), ...e };
    session.events.push(event);
    for (const res of session.listeners)
      res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  }
}

/** Routes `/v1/sessions…`; false when the path is not a sessions path. */
export function handleSessions(
  ex: Exchange,
  store: SessionStore,
  path: string,
  query: URLSearchParams,
  body: Buffer | null,
): boolean {
  const m = /^\/v1\/sessions(?:\/([^/]+)(\/events(?:\/stream)?)?)?$/.exec(path);
  if (!m) return false;
  const [, id, sub] = m;
  const method = ex.req.method;
  const json = (value: unknown) => sendJson(ex, 200, JSON.stringify(value), jsonHeaders(ex.requestId, false));
  const parsed = () => jsonBody(body);
  if (!id && method === 'POST') json(store.create(parsed()).object);
  else if (!id && method === 'GET')
    json(
      page(
        [...store.sessions.values()].map((s) => s.object),
        query,
      ),
    );
  else if (id && !sub && method === 'GET') json(store.get(id).object);
  else if (id && !sub && method === 'DELETE') {
    store.get(id);
    store.sessions.delete(id);
    json({ id, type: 'session_deleted' });
  } else if (id && sub === '/events' && method === 'POST')
    json({ data: store.send(store.get(id), parsed()) });
  else if (id && sub === '/events' && method === 'GET')
    json(page(store.get(id).events as { id: string }[], query));
  else if (id && sub === '/events/stream' && method === 'GET') {
    const session = store.get(id);
    ex.res.writeHead(200, sseHeaders(ex.requestId));
    ex.res.write(': stream open\n\n');
    session.listeners.add(ex.res);
    ex.res.once('close', () => session.listeners.delete(ex.res));
  } else throw new EmulatorError('not_found_error', `Not found: ${method} ${path}`);
  return true;
}
