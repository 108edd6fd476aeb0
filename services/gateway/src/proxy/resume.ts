import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env';
import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { StreamEvents, StreamOwner } from '../streams/events';
import { errorEvent } from './in-flight';
import { KEEP_ALIVE_LINE, type QuietStream, type SseKeepAlive } from './keep-alive';

const CALL_ID = /^req_[0-9A-Za-z]{1,64}$/;

/**
 * `GET /v1/messages/{call id}/events`: the events of a resumable stream after the one named
 * by `Last-Event-ID` (`<call id>:<seq>`; none: from the first), then the live ones until the
 * stream ends, from whichever instance runs the call. Only the caller's own account, with
 * the same key or the same member, may read them; any other caller is told the call is unknown.
 */
export async function resumeStream(
  c: Context<AppEnv>,
  events: StreamEvents | null,
  keepAlive: SseKeepAlive | null,
): Promise<Response> {
  const { incoming: req, outgoing: res } = c.env;
  const callId = c.req.param('id') ?? '';
  const after = lastSeq(callId, req.headers['last-event-id']);
  const owner = CALL_ID.test(callId) && events ? await events.owner(callId) : null;
  if (!events || !owner || !mayRead(c.var.principal, owner)) {
    throw new GatewayError(
      'not_found_error',
      `No resumable stream ${callId}: it is unknown, expired (kept 10 minutes by default), dropped to stay within the gateway's memory caps, or not this key's.`,
    );
  }
  const requestId = c.var.requestId;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'keygate-call-id': callId,
    'request-id': requestId,
  });
  res.flushHeaders();
  const left = new AbortController();
  const quiet: QuietStream = {
    wrote: false,
    quietTicks: 0,
    keepAlive() {
      this.quietTicks = 0;
      res.write(KEEP_ALIVE_LINE);
    },
  };
  const onClose = () => left.abort();
  res.once('close', onClose);
  keepAlive?.watch(quiet);
  try {
    const follow = events.follow(callId, after, left.signal);
    let step = await follow.next();
    while (!step.done) {
      quiet.wrote = true;
      if (!res.write(step.value.frame)) await new Promise((r) => res.once('drain', r).once('close', r));
      if (left.signal.aborted) break;
      step = await follow.next();
    }
    if (step.done && step.value === 'truncated') {
      res.write(
        errorEvent(
          new GatewayError(
            'api_error',
            'The rest of this stream was larger than the gateway keeps per call.',
          ),
          requestId,
        ),
      );
    } else if (step.done && step.value === null && !left.signal.aborted) {
      res.write(
        errorEvent(new GatewayError('not_found_error', 'This stream expired before it ended.'), requestId),
      );
    }
    if (step.done === false) await follow.return(null);
  } finally {
    keepAlive?.unwatch(quiet);
    res.off('close', onClose);
    res.end();
  }
  return RESPONSE_ALREADY_SENT;
}

function mayRead(p: Principal, owner: StreamOwner): boolean {
  const { key } = p;
  if (key.accountId !== owner.accountId) return false;
  return key.id === owner.keyId || (owner.memberId !== null && key.memberId === owner.memberId);
}

/** The sequence number in `Last-Event-ID`; 0 (from the start) without one. */
function lastSeq(callId: string, header: string | string[] | undefined): number {
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined || raw === '') return 0;
  const at = raw.lastIndexOf(':');
  const seq = Number(raw.slice(at + 1));
  if (at === -1 || raw.slice(0, at) !== callId || !Number.isSafeInteger(seq) || seq < 0) {
    throw new GatewayError(
      'invalid_request_error',
      `Last-Event-ID: expected '${callId}:<sequence>' as sent in this stream's id lines.`,
    );
  }
  return seq;
}
