import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { SseFramer } from '@keygate/protocol';
import type { ErrorType } from '../lib/errors';

/**
 * Bedrock's errors: `{"message": "..."}` with the exception's name in `x-amzn-ErrorType`
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html#API_runtime_InvokeModel_Errors
 * and https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html, read
 * 2026-11-29). The status stays Keygate's, so the SDK's status-to-error mapping (401
 * AuthenticationError, 429 RateLimitError…) and its retries read as they do for the provider.
 */
const EXCEPTION: Record<ErrorType, string> = {
  invalid_request_error: 'ValidationException',
  authentication_error: 'UnrecognizedClientException',
  billing_error: 'AccessDeniedException',
  permission_error: 'AccessDeniedException',
  not_found_error: 'ResourceNotFoundException',
  request_too_large: 'ValidationException',
  rate_limit_error: 'ThrottlingException',
  timeout_error: 'ModelTimeoutException',
  api_error: 'InternalServerException',
  overloaded_error: 'ServiceUnavailableException',
};

export const exceptionOf = (type: string): string =>
  EXCEPTION[type as ErrorType] ?? 'InternalServerException';

/** A provider error body as Bedrock's: its message, and the exception's name for the header. */
export function bedrockError(text: string): { body: string; exception: string } | null {
  let parsed: { type?: unknown; error?: { type?: unknown; message?: unknown } };
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (parsed?.type !== 'error' || typeof parsed.error?.message !== 'string') return null;
  return {
    body: JSON.stringify({ message: parsed.error.message }),
    exception: exceptionOf(String(parsed.error.type)),
  };
}

/**
 * InvokeModelWithResponseStream answers `application/vnd.amazon.eventstream`: binary frames, each
 * a `chunk` event whose payload is `{"bytes": "<base64 of one Messages stream event's JSON>"}`
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html,
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_PayloadPart.html, read
 * 2026-11-29; the official Bedrock SDK decodes exactly this). The framing (prelude, header
 * encoding, two CRC32s) is Smithy's own codec, the one the AWS SDKs decode with.
 */
const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

const CHUNK_HEADERS = {
  ':event-type': { type: 'string', value: 'chunk' },
  ':content-type': { type: 'string', value: 'application/json' },
  ':message-type': { type: 'string', value: 'event' },
} as const;

export function chunkFrame(eventJson: string): Uint8Array {
  const payload = JSON.stringify({ bytes: Buffer.from(eventJson, 'utf8').toString('base64') });
  return codec.encode({ headers: CHUNK_HEADERS, body: Buffer.from(payload, 'utf8') });
}

/**
 * The client's response as the proxy writes a Messages answer into it, written out as Bedrock's:
 * a stream re-framed event by event, an error as Bedrock's error body; a JSON answer is the
 * same in both. Everything else (events, sockets, state) is the real response's.
 */
export function bedrockResponse(res: ServerResponse): ServerResponse {
  let mode: 'pass' | 'events' | 'error' = 'pass';
  let held: Buffer[] = [];
  let status = 0;
  let head: OutgoingHttpHeaders = {};
  const framer = new SseFramer((lines) => {
    const data = lines
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
      .join('\n');
    // Comment lines (keep-alives) carry no event: Bedrock's stream has nothing for them.
    if (data) res.write(chunkFrame(data));
  });
  const own = {
    writeHead(code: number, headers?: OutgoingHttpHeaders) {
      const h: OutgoingHttpHeaders = { ...headers };
      const type = String(h['content-type'] ?? '');
      delete h['content-length'];
      if (code === 200 && type.startsWith('text/event-stream')) {
        mode = 'events';
        h['content-type'] = 'application/vnd.amazon.eventstream';
        h['x-amzn-bedrock-content-type'] = 'application/json';
        return res.writeHead(code, h);
      }
      if (code >= 400 && type.startsWith('application/json')) {
        mode = 'error';
        status = code;
        head = h;
        return res;
      }
      return res.writeHead(code, headers);
    },
    write(chunk: Buffer | string) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (mode === 'pass') return res.write(bytes);
      if (mode === 'error') held.push(bytes);
      else framer.write(bytes);
      return !res.writableNeedDrain;
    },
    end(chunk?: Buffer | string) {
      if (chunk !== undefined && typeof chunk !== 'function') own.write(chunk);
      if (mode === 'events') framer.end();
      if (mode !== 'error') return res.end();
      const text = Buffer.concat(held).toString('utf8');
      held = [];
      const shaped = bedrockError(text);
      if (shaped) {
        head['x-amzn-errortype'] = shaped.exception;
        head['content-length'] = Buffer.byteLength(shaped.body);
      }
      res.writeHead(status, head);
      return res.end(shaped?.body ?? text);
    },
  };
  return new Proxy(res, {
    get(target, prop) {
      if (prop in own) return own[prop as keyof typeof own];
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
