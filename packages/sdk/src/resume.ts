import type { Middleware } from '@anthropic-ai/sdk';
import { eventName, SseFramer } from '@keygate/protocol';

export const RESUMABLE_HEADER = 'keygate-resumable';
const encoder = new TextEncoder();

/** What the client's `resumeStreams` option asks of streaming Messages calls. */
export interface ResumePolicy {
  /** `true`/`false`: sent as `keygate-resumable`; null: nothing sent, the key's setting decides. */
  ask: boolean | null;
  /** Resumptions per stream the gateway kept. */
  maxResumes: number;
}

/** `resumeStreams`: true → ask, 3 resumptions; N → ask, N; false or 0 → say no; unset → follow the key. */
export function resumePolicy(option: boolean | number | undefined): ResumePolicy {
  if (option === undefined) return { ask: null, maxResumes: DEFAULT_RESUMES };
  if (option === true) return { ask: true, maxResumes: DEFAULT_RESUMES };
  if (option === false || option === 0) return { ask: false, maxResumes: 0 };
  return { ask: true, maxResumes: option };
}

const DEFAULT_RESUMES = 3;

/**
 * Streams that survive a dropped connection: a streaming Messages call the gateway keeps
 * (asked with `keygate-resumable: true`, or kept because its key is set so) answers with
 * `keygate-call-id`. If the connection drops before the stream's last event, this asks for the
 * rest (`GET /v1/messages/{call id}/events` with `Last-Event-ID`) and hands it on, so the app
 * reads one stream with every event once. Only whole events are handed on, so a resumed stream
 * never repeats or splits one.
 */
export function resumeMiddleware({ ask, maxResumes }: ResumePolicy): Middleware {
  return async function resume(request, next, ctx) {
    if (!ctx.options?.stream || request.method !== 'POST' || !isMessages(request.url)) return next(request);
    if (ask !== null) request.headers.set(RESUMABLE_HEADER, String(ask));
    const response = await next(request);
    if (maxResumes <= 0) return response;
    const callId = response.headers.get('keygate-call-id');
    if (!response.ok || !callId || !response.body) return response;
    const reopen = async (lastEventId: string): Promise<ReadableStream<Uint8Array>> => {
      const url = new URL(request.url);
      url.pathname = url.pathname.replace(
        /\/v1\/messages$/,
        `/v1/messages/${encodeURIComponent(callId)}/events`,
      );
      url.search = '';
      const headers = new Headers(request.headers);
      for (const name of ['content-type', 'content-length', RESUMABLE_HEADER]) headers.delete(name);
      headers.set('last-event-id', lastEventId);
      headers.set('accept', 'text/event-stream');
      const { body: _body, duplex: _duplex, ...rest } = request as typeof request & { duplex?: unknown };
      const again = await next({ ...rest, url: url.toString(), method: 'GET', headers });
      if (!again.ok || !again.body) {
        await again.body?.cancel().catch(() => {});
        throw new Error(`keygate: could not resume the stream (HTTP ${again.status})`);
      }
      return again.body;
    };
    return new Response(resumingBody(response.body, reopen, maxResumes), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function isMessages(url: string): boolean {
  try {
    return new URL(url).pathname.endsWith('/v1/messages');
  } catch {
    return false;
  }
}

/** The stream's whole events; when the source breaks before the last one, the rest from `reopen`. */
export function resumingBody(
  first: ReadableStream<Uint8Array>,
  reopen: (lastEventId: string) => Promise<ReadableStream<Uint8Array>>,
  maxResumes: number,
): ReadableStream<Uint8Array> {
  let reader = first.getReader();
  let lastId: string | null = null;
  let finished = false;
  let resumes = 0;
  const ready: Uint8Array[] = [];
  const framer = new SseFramer((lines) => {
    for (const line of lines) if (line.startsWith('id:')) lastId = line.slice(3).trim();
    const name = eventName(lines);
    if (name === 'message_stop' || name === 'error') finished = true;
    ready.push(encoder.encode(`${lines.join('\n')}\n\n`));
  });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (ready.length === 0) {
        let step: { done: boolean; value?: Uint8Array | undefined };
        try {
          step = await reader.read();
        } catch (error) {
          if (finished || lastId === null || resumes >= maxResumes) throw error;
          step = { done: true, value: undefined };
        }
        if (!step.done && step.value) {
          framer.write(step.value);
          continue;
        }
        // The source ended: at the stream's last event, or cut short (a clean close can cut it too).
        if (finished || lastId === null || resumes >= maxResumes) {
          framer.end();
          for (const chunk of ready.splice(0)) controller.enqueue(chunk);
          return controller.close();
        }
        resumes++;
        // Half an event from the broken connection is dropped: it comes again whole.
        framer.reset();
        reader = (await reopen(lastId)).getReader();
      }
      for (const chunk of ready.splice(0)) controller.enqueue(chunk);
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  });
}
