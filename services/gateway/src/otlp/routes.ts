import type { HttpBindings } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { keyAuth, type KeyAuthVariables } from '../auth/middleware';
import type { KeyResolver } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { requestBody, type RequestBodyVariables } from '../lib/request-body';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import type { Store } from '../store';
import type { TelemetrySender } from '../reports/telemetry-queries';
import {
  decodeRequest,
  encodeRequest,
  exportResponse,
  LOGS_REQUEST,
  LOGS_RESPONSE,
  METRICS_REQUEST,
  METRICS_RESPONSE,
} from './proto';
import { readEvents, readMetrics, TOO_LONG } from './read';
import type { OtlpRelay } from './relay';

interface OtlpEnv {
  Bindings: HttpBindings;
  Variables: KeyAuthVariables & RequestBodyVariables & { logger: Logger };
}

export interface OtlpDeps {
  resolver: KeyResolver;
  store: Pick<Store, 'telemetry'>;
  clock: () => number;
  relay?: OtlpRelay | null;
}

type Encoding = 'protobuf' | 'json';

/** The export request's encoding from its content type (parameters such as charset ignored). */
function encodingOf(c: Context): Encoding {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  throw new GatewayError(
    'invalid_request_error',
    `Unsupported content type '${type || '(none)'}': OTLP/HTTP takes application/x-protobuf or application/json.`,
    { status: 415 },
  );
}

/** The export request, decoded: JSON through the body reader's bounds, protobuf by its schema. */
async function decode(c: Context, encoding: Encoding, signal: 'metrics' | 'logs'): Promise<unknown> {
  if (encoding === 'json') return requestBody(c).json();
  const bytes = await requestBody(c).bytes();
  try {
    return decodeRequest(signal === 'metrics' ? METRICS_REQUEST : LOGS_REQUEST, bytes);
  } catch {
    throw new GatewayError(
      'invalid_request_error',
      `The body is not a valid OTLP protobuf ${signal} export request.`,
    );
  }
}

/** The success answer in the request's encoding, with a partial success when points or records were refused. */
function accepted(c: Context, encoding: Encoding, signal: 'metrics' | 'logs', rejected: number): Response {
  const answer = exportResponse(signal, rejected, `${rejected} refused: ${TOO_LONG}`);
  if (encoding === 'json') return c.json(answer);
  const bytes = encodeRequest(signal === 'metrics' ? METRICS_RESPONSE : LOGS_RESPONSE, answer);
  return c.body(new Uint8Array(bytes), 200, { 'content-type': 'application/x-protobuf' });
}

const DAY = (d: Date) => d.toISOString().slice(0, 10);

/**
 * OTLP/HTTP for Claude Code's telemetry (`OTEL_EXPORTER_OTLP_ENDPOINT=<gateway>/otlp`): metrics
 * and logs, protobuf or JSON, gzip or not. Only a member's key may send, and every data point
 * is attributed to that member, whatever the payload's own user attributes say.
 */
export function otlpRoutes(deps: OtlpDeps, at = '/otlp'): Hono<OtlpEnv> {
  const app = new Hono<OtlpEnv>();
  // `at` '' serves Claude Code's gateway telemetry (`{base}/v1/{metrics,logs}`, claude-gateway/),
  // where `{base}/v1/*` holds the calls too: then only the two paths are this receiver's.
  const guarded = at ? [`${at}/*`] : ['/v1/metrics', '/v1/logs'];
  for (const path of guarded) {
    // The key first: a wrong key is refused before its upload is read.
    app.use(path, keyAuth<OtlpEnv>(deps.resolver, ['live', 'test']));
    app.use(path, async function memberOnly(c, next) {
      if (!c.var.principal.key.memberId)
        throw new GatewayError(
          'permission_error',
          "Telemetry is attributed to a member: send a member's key (this key belongs to no member).",
        );
      await next();
    });
    app.use(path, bodyReader(BODIES.otlp));
  }

  const sender = (c: Context<OtlpEnv>): TelemetrySender => {
    const { key, account } = c.var.principal;
    return { accountId: account.id, memberId: key.memberId!, keyId: key.id };
  };

  app.post(`${at}/v1/metrics`, async function otlpMetrics(c) {
    const encoding = encodingOf(c);
    const { points, rejected } = readMetrics(await decode(c, encoding, 'metrics'), new Date(deps.clock()));
    const by = sender(c);
    await deps.store.telemetry.writeMetrics(
      by,
      points.map((p) => ({
        day: DAY(p.at),
        sessionId: p.sessionId,
        metric: p.metric,
        dims: p.dims,
        seriesStart: p.start,
        cumulative: p.cumulative,
        value: p.value,
      })),
    );
    // Relayed as kept: the same metrics and allow-listed attributes, never what the sender added.
    deps.relay?.send(by.accountId, 'metrics', points);
    return accepted(c, encoding, 'metrics', rejected);
  });

  app.post(`${at}/v1/logs`, async function otlpLogs(c) {
    const encoding = encodingOf(c);
    const { events, rejected } = readEvents(await decode(c, encoding, 'logs'), new Date(deps.clock()));
    const by = sender(c);
    await deps.store.telemetry.writeEvents(by, events);
    // What is relayed is what was kept: the same stripped events, never the prompt text.
    deps.relay?.send(by.accountId, 'logs', events);
    return accepted(c, encoding, 'logs', rejected);
  });
  return app;
}
