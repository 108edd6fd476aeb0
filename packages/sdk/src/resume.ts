import type { Middleware } from '@anthropic-ai/sdk';
import { eventName, SseFramer } from '@keygate/protocol';

export const RESUMABLE_HEADER = 'keygate-resumable';
const encoder = new TextEncoder();

/**
 * Streams that survive a dropped connection: each streaming Messages call asks the gateway to
 * keep its events (`keygate-resumable: true`). If the connection drops before the stream's last
 * event, this asks for the rest (`GET /v1/messages/{call id}/events` with `Last-Event-ID`) and
 * hands it on, so the app reads one stream with every event once. Only whole events are
 * handed on, so a resumed stream never repeats or splits one.
 */
export function resumeMiddleware(maxResumes: number): Middleware {
  return async function resume(request, next, ctx) {
    if (maxResumes <= 0 || !ctx.options?.stream || request.method !== 'POST' || !isMessages(request.url))
      return next(request);
    request.headers.set(RESUMABLE_HEADER, 'true');
    const response = await next(request);
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
