/** One call as its client saw it. */
export interface Answer {
  /** The id of the gateway's call record (keygate-request-id; request-id on the gateway's own errors). Null when no gateway answered. */
  requestId: string | null;
  /** HTTP status, or 0 when the call failed without an answer (connection error). */
  status: number;
  sentAt: number;
  /** When the client had the whole answer (Date.now()). */
  at: number;
  /** The instance HAProxy sent it to (x-keygate-instance), when it went through the balancer. */
  instance: string | null;
  /** The error type of an error answer, or the client-side failure. */
  error: string | null;
  /** The answer's `request-id` header (the provider's on an answer it gave, else the gateway's). */
  requestIdHeader: string | null;
  /** What the client read of the body: all of it, or what came before it broke off or the client hung up. */
  body: string;
}

export interface LoadOptions {
  concurrency: number;
  /** Stops after this long, or when `stop` says so. */
  durationMs?: number;
  stop?: () => boolean;
  headers?: Record<string, string>;
  stream?: boolean;
  hangUp?: boolean;
  /** Sees each answer as it comes. */
  onAnswer?: (a: Answer) => void;
}

const body = (stream: boolean) =>
  JSON.stringify({
    model: 'claude-opus-4-5',
    max_tokens: 16,
    stream,
    messages: [{ role: 'user', content: 'hello' }],
  });

/** One model call with an app key; never throws. `hangUp`: the client goes away after the first bytes of the answer. */
export async function call(
  url: string,
  key: string,
  headers: Record<string, string> = {},
  stream = false,
  hangUp = false,
): Promise<Answer> {
  const sentAt = Date.now();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 30_000);
  let seen: Omit<Answer, 'at' | 'error' | 'body'> | null = null;
  let text = '';
  try {
    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: body(stream),
      signal: abort.signal,
    });
    const requestId = res.headers.get('keygate-request-id') ?? res.headers.get('request-id');
    seen = {
      requestId,
      status: res.status,
      sentAt,
      instance: res.headers.get('x-keygate-instance'),
      requestIdHeader: res.headers.get('request-id'),
    };
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    if (hangUp) {
      text = (await reader.read()).value ?? '';
      abort.abort();
      return { ...seen, at: Date.now(), error: 'client_hung_up', body: text };
    }
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
    let error: string | null = null;
    if (res.status >= 400)
      error = (JSON.parse(text) as { error?: { type?: string } }).error?.type ?? 'unknown';
    else if (stream && !text.includes('event: message_stop')) error = 'stream_incomplete';
    return { ...seen, at: Date.now(), error, body: text };
  } catch (err) {
    const error = String((err as Error).cause ?? err);
    // Answered, then the body broke off (a stream cut): the call was still the gateway's.
    if (seen) return { ...seen, at: Date.now(), error: `body broke off: ${error}`, body: text };
    return {
      requestId: null,
      status: 0,
      sentAt,
      at: Date.now(),
      instance: null,
      error,
      requestIdHeader: null,
      body: '',
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Calls from `concurrency` clients in a loop until the duration ends or `stop` says so. */
export async function drive(url: string, key: string, opts: LoadOptions): Promise<Answer[]> {
  const answers: Answer[] = [];
  const end = opts.durationMs === undefined ? Infinity : Date.now() + opts.durationMs;
  const done = () => Date.now() >= end || (opts.stop?.() ?? false);
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (!done()) {
        const a = await call(url, key, opts.headers, opts.stream, opts.hangUp);
        answers.push(a);
        opts.onAnswer?.(a);
      }
    }),
  );
  return answers;
}

/** A count of each value of `f` over `items`. */
export function tally<T>(items: T[], f: (t: T) => string | number | null): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[String(f(i))] = (out[String(f(i))] ?? 0) + 1;
  return out;
}
