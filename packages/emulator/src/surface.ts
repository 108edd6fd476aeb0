import { AgentStore, handleAgents } from './agents';
import { BatchStore, handleBatches, type BatchOptions } from './batches';
import { EmulatorError } from './errors';
import { FileStore, handleFiles } from './files';
import { readBody, sendError, type Exchange } from './http';
import type { Ledger } from './ledger';
import { readScenario } from './scenarios';
import { handleSessions, SessionStore } from './sessions';
import { handleSkills, SkillStore } from './skills';

/** The provider's endpoints beyond messages: files, message batches, skills and sessions, with their state. */
export class Surface {
  readonly files = new FileStore();
  readonly batches: BatchStore;

  constructor(ledger: Ledger, opts: BatchOptions = {}) {
    this.batches = new BatchStore(ledger, opts);
  }

  readonly agents = new AgentStore();
  readonly sessions = new SessionStore(this.agents);
  readonly skills = new SkillStore();

  static handles(path: string): boolean {
    return /^\/v1\/(files|messages\/batches|sessions|skills|agents|environments)(\/|$)/.test(path);
  }

  /** Answers one request (auth already checked); the provider's error shape for every failure. */
  route(
    ex: Exchange,
    path: string,
    query: string,
    preread: Buffer | undefined,
    defaultScenario?: string,
  ): void {
    const params = new URLSearchParams(query);
    try {
      if (path.startsWith('/v1/files')) {
        if (!handleFiles(ex, this.files, path, params, preread)) notFound(ex, path);
        return;
      }
      if (path.startsWith('/v1/skills')) {
        if (!handleSkills(ex, this.skills, path, params)) notFound(ex, path);
        return;
      }
      const scenario = readScenario(ex.req.headers, defaultScenario);
      const run = (body: Buffer | null) => {
        try {
          const done = path.startsWith('/v1/sessions')
            ? handleSessions(ex, this.sessions, path, params, body)
            : /^\/v1\/(agents|environments)/.test(path)
              ? handleAgents(ex, this.agents, path, params, body)
              : handleBatches(ex, this.batches, path, params, body, scenario);
          if (!done) notFound(ex, path);
        } catch (err) {
          fail(ex, err);
        }
      };
      if (ex.req.method !== 'POST') run(null);
      else if (preread !== undefined) run(preread);
      else readBody(ex, run);
    } catch (err) {
      fail(ex, err);
    }
  }
}

function notFound(ex: Exchange, path: string): void {
  sendError(ex, new EmulatorError('not_found_error', `Not found: ${ex.req.method ?? ''} ${path}`));
}

function fail(ex: Exchange, err: unknown): void {
  if (err instanceof EmulatorError) return sendError(ex, err);
  if (ex.res.headersSent) return void ex.res.destroy();
  sendError(ex, new EmulatorError('api_error', `Emulator bug: ${(err as Error).message}`));
}
