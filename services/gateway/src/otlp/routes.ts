import type { HttpBindings } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { gunzipSync } from 'node:zlib';
import { keyAuth, type KeyAuthVariables } from '../auth/middleware';
import type { KeyResolver } from '../auth/resolver';
import { BODY_LIMITS, limitBody } from '../lib/body-limit';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { Store, TelemetrySender } from '../store';
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
  Variables: KeyAuthVariables & { logger: Logger };
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

/** The body's bytes, gunzipped when sent with content-encoding gzip; the inflated size is bounded too. */
async function bodyBytes(c: Context): Promise<Uint8Array> {
  const raw = new Uint8Array(await c.req.arrayBuffer());
  const coding = (c.req.header('content-encoding') ?? 'identity').trim().toLowerCase();
  if (coding === 'identity' || coding === '') return raw;
  if (coding !== 'gzip')
    throw new GatewayError(
      'invalid_request_error',
      `Unsupported content encoding '${coding}': send gzip or none.`,
      { status: 415 },
    );
  try {
    return gunzipSync(raw, { maxOutputLength: BODY_LIMITS.otlpInflated });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
      throw new GatewayError(
        'request_too_large',
        `Request body too large: an OTLP export inflates to at most ${BODY_LIMITS.otlpInflated} bytes.`,
      );
    throw new GatewayError('invalid_request_error', 'The body is not valid gzip data.');
  }
}

function decode(bytes: Uint8Array, encoding: Encoding, signal: 'metrics' | 'logs'): unknown {
  try {
    if (encoding === 'json') return JSON.parse(Buffer.from(bytes).toString('utf8'));
    return decodeRequest(signal === 'metrics' ? METRICS_REQUEST : LOGS_REQUEST, bytes);
  } catch {
    throw new GatewayError(
      'invalid_request_error',
      encoding === 'json'
        ? `The body is not valid JSON: expected an OTLP/JSON ${signal} export request.`
        : `The body is not a valid OTLP protobuf ${signal} export request.`,
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
export function otlpRoutes(deps: OtlpDeps): Hono<OtlpEnv> {
  const app = new Hono<OtlpEnv>();
  // The key first: a wrong key is refused before its upload is read.
  app.use('/otlp/*', keyAuth<OtlpEnv>(deps.resolver, ['live', 'test']));
  app.use('/otlp/*', async function memberOnly(c, next) {
    if (!c.var.principal.key.memberId)
      throw new GatewayError(
        'permission_error',
        "Telemetry is attributed to a member: send a member's key (this key belongs to no member).",
      );
    await next();
  });
  app.use('/otlp/*', limitBody(BODY_LIMITS.otlp));

  const sender = (c: Context<OtlpEnv>): TelemetrySender => {
    const { key, account } = c.var.principal;
    return { accountId: account.id, memberId: key.memberId!, keyId: key.id };
  };

  app.post('/otlp/v1/metrics', async function otlpMetrics(c) {
    const encoding = encodingOf(c);
    const bytes = await bodyBytes(c);
    const { points, rejected } = readMetrics(decode(bytes, encoding, 'metrics'), new Date(deps.clock()));
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

  app.post('/otlp/v1/logs', async function otlpLogs(c) {
    const encoding = encodingOf(c);
    const bytes = await bodyBytes(c);
    const { events, rejected } = readEvents(decode(bytes, encoding, 'logs'), new Date(deps.clock()));
    const by = sender(c);
    await deps.store.telemetry.writeEvents(by, events);
    // What is relayed is what was kept: the same stripped events, never the prompt text.
    deps.relay?.send(by.accountId, 'logs', events);
    return accepted(c, encoding, 'logs', rejected);
  });
  return app;
}
