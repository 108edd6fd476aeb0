import type { IncomingMessage, ServerResponse } from 'node:http';
import { PromptCache } from './cache';
import { EmulatorError } from './errors';
import { jsonHeaders, readBody, sendError, sendJson, clientGone, type Exchange } from './http';
import { newRequestId } from './ids';
import { Ledger } from './ledger';
import { handleCountTokens, handleMessages } from './messages';
import { getModel, listModels } from './models';
import { handleAdminReport } from './admin-reports';
import { readScenario, scenarioLabel, type Scenario } from './scenarios';
import { Surface } from './surface';
import { holdMidStream } from './silence';
import type { EmulatorHandler, Endpoint, HandlerOptions, RequestListener } from './types';

export const DEFAULT_API_KEY = 'sk-ant-emulator-key';
/** The organization Admin API's key (usage and cost reports). */
export const DEFAULT_ADMIN_KEY = 'sk-ant-admin01-emulator-key';

interface Target {
  endpoint: Endpoint;
  path: string;
  query: string;
}

interface Deps {
  apiKey: string | null;
  adminKey: string;
  acceptBearer: boolean;
  defaultScenario: string | undefined;
  ledger: Ledger;
  cache: PromptCache;
  surface: Surface;
}

/**
 * The emulator as a plain node:http request listener, to mount on any server. The returned
 * function also carries the `ledger` and prompt `cache` it records into.
 */
export function createEmulatorHandler(opts: HandlerOptions = {}): EmulatorHandler {
  const ledger = opts.ledger ?? new Ledger(opts.ledgerLimit);
  const deps: Deps = {
    apiKey: opts.apiKey === undefined ? DEFAULT_API_KEY : opts.apiKey,
    acceptBearer: opts.acceptBearer ?? false,
    adminKey: opts.adminKey ?? DEFAULT_ADMIN_KEY,
    defaultScenario: opts.defaultScenario,
    ledger,
    cache: opts.cache ?? new PromptCache(opts.clock ?? Date.now),
    surface: new Surface(ledger, opts.batchMs ? { batchMs: opts.batchMs } : {}),
  };
  const handler = function emulator(req: IncomingMessage, res: ServerResponse, body?: Buffer): void {
    route(deps, handler.onRequest, req, res, body);
  } as EmulatorHandler;
  handler.ledger = deps.ledger;
  handler.cache = deps.cache;
  handler.surface = deps.surface;
  handler.onRequest = opts.onRequest ?? null;
  return handler;
}

function route(
  deps: Deps,
  onRequest: RequestListener | null,
  req: IncomingMessage,
  res: ServerResponse,
  preread: Buffer | undefined,
): void {
  const ex: Exchange = { req, res, requestId: newRequestId(), entry: null, ledger: deps.ledger };
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (req.method === 'GET' && path.startsWith('/v1/organizations/')) {
    return handleAdminReport(
      ex,
      deps.ledger,
      path,
      new URLSearchParams(q === -1 ? '' : url.slice(q + 1)),
      deps.adminKey,
    );
  }
  if (Surface.handles(path)) {
    const authError = checkAuth(deps, req);
    if (authError) return sendError(ex, authError);
    return deps.surface.route(ex, path, q === -1 ? '' : url.slice(q + 1), preread, deps.defaultScenario);
  }
  const endpoint = endpointOf(req.method, path);
  if (endpoint === null) {
    return sendError(ex, new EmulatorError('not_found_error', `Not found: ${req.method ?? ''} ${path}`));
  }
  const target: Target = { endpoint, path, query: q === -1 ? '' : url.slice(q + 1) };
  const label = scenarioLabel(req.headers, deps.defaultScenario);
  // Node hands us lowercased names; only set-cookie could be an array, and requests do not send it.
  ex.entry = deps.ledger.open(
    ex.requestId,
    endpoint,
    req.headers as Record<string, string>,
    label,
    Date.now(),
  );

  const authError = checkAuth(deps, req);
  if (authError) return sendError(ex, authError);
  let scenario: Scenario;
  try {
    scenario = readScenario(req.headers, deps.defaultScenario);
    if (scenario.has.has('long_silence')) holdMidStream(res, req.headers);
  } catch (err) {
    return sendError(ex, err as EmulatorError);
  }
  const respond = (body: Buffer | null) => {
    onRequest?.({
      requestId: ex.requestId,
      method: req.method!,
      path,
      query: target.query,
      headers: { ...(req.headers as Record<string, string>) },
      body: body ?? Buffer.alloc(0),
    });
    afterDelay(ex, scenario, () => dispatch(deps, ex, target, body, scenario));
  };
  if (req.method !== 'POST') respond(null);
  else if (preread !== undefined) respond(preread);
  // A host server that already drained the body without handing it over: nothing left to read.
  else if (req.readableEnded) respond(Buffer.alloc(0));
  else readBody(ex, respond);
}

function endpointOf(method: string | undefined, path: string): Endpoint | null {
  if (method === 'POST') {
    if (path === '/v1/messages') return 'messages';
    if (path === '/v1/messages/count_tokens') return 'count_tokens';
  } else if (method === 'GET' && (path === '/v1/models' || path.startsWith('/v1/models/'))) {
    return 'models';
  }
  return null;
}

function checkAuth(deps: Deps, req: IncomingMessage): EmulatorError | null {
  const key = req.headers['x-api-key'];
  let presented = typeof key === 'string' && key !== '' ? key : null;
  if (presented === null && deps.acceptBearer) {
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ') && auth.length > 7) presented = auth.slice(7);
  }
  if (presented === null) return new EmulatorError('authentication_error', 'x-api-key header is required');
  if (deps.apiKey !== null && presented !== deps.apiKey)
    return new EmulatorError('authentication_error', 'invalid x-api-key');
  return null;
}

/** slow_first_byte: hold the response back, but let a departing client cancel the wait. */
function afterDelay(ex: Exchange, scenario: Scenario, run: () => void): void {
  if (!scenario.has.has('slow_first_byte')) return run();
  const onClose = () => {
    clearTimeout(timer);
    clientGone(ex);
  };
  const timer = setTimeout(() => {
    ex.res.off('close', onClose);
    run();
  }, scenario.delayMs);
  ex.res.on('close', onClose);
}

function dispatch(
  deps: Deps,
  ex: Exchange,
  { endpoint, path, query }: Target,
  body: Buffer | null,
  scenario: Scenario,
): void {
  try {
    const injected = injectedError(scenario);
    if (injected) return sendError(ex, injected);
    switch (endpoint) {
      case 'messages':
        return handleMessages(ex, body!, scenario, deps.cache);
      case 'count_tokens':
        return handleCountTokens(ex, body!);
      case 'models': {
        if (path === '/v1/models') {
          const page = listModels(new URLSearchParams(query));
          return sendJson(ex, 200, JSON.stringify(page), jsonHeaders(ex.requestId, false));
        }
        const id = safeDecode(path.slice('/v1/models/'.length));
        ex.entry!.model = id;
        return sendJson(ex, 200, JSON.stringify(getModel(id)), jsonHeaders(ex.requestId, false));
      }
    }
  } catch (err) {
    if (err instanceof EmulatorError) return sendError(ex, err);
    if (ex.res.headersSent) {
      ex.res.destroy();
      return clientGone(ex);
    }
    sendError(ex, new EmulatorError('api_error', `Emulator bug: ${(err as Error).message}`));
  }
}

/** The error scenarios, checked in this order. */
function injectedError(scenario: Scenario): EmulatorError | null {
  const has = scenario.has;
  if (has.size === 0) return null;
  if (has.has('rate_limit')) {
    return new EmulatorError(
      'rate_limit_error',
      'This request would exceed your rate limit (emulated rate_limit scenario).',
      {
        'retry-after': String(scenario.retryAfterS),
        'x-should-retry': 'true',
        'anthropic-ratelimit-requests-remaining': '0',
      },
    );
  }
  if (has.has('overloaded'))
    return new EmulatorError('overloaded_error', 'Overloaded', { 'x-should-retry': 'true' });
  if (has.has('api_error'))
    return new EmulatorError('api_error', 'Internal server error', { 'x-should-retry': 'true' });
  if (has.has('invalid_request')) {
    return new EmulatorError(
      'invalid_request_error',
      'Emulated invalid_request scenario: this exact message must reach the client unchanged.',
    );
  }
  return null;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
