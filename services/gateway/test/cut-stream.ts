import type { LedgerEntry } from '@keygate/emulator';
import { PROVIDER_KEY, type Stack } from './harness';
import { waitFor } from './kit/wait';

/** Deltas the emulator has left to send after the cut point, so the stream is still going when it is cut. */
const AHEAD = 40;
const QUESTION =
  'Please explain how the gateway accounts for a stream that a client abandons halfway through.';

export interface Cut {
  /** The call log row of the call. */
  row: Record<string, any>;
  /** What the emulator served and billed. */
  entry: LedgerEntry;
  /** content_block_delta events the client received. */
  clientDeltas: number;
}

/**
 * One streamed call through the gateway whose reply is one word per delta, ended after
 * `after` deltas: by the client leaving (`client`, deltas `intervalMs` apart), or by the
 * provider cutting the connection (`upstream`).
 */
export async function cutStream(
  stack: Stack,
  after: number,
  by: 'client' | 'upstream',
  intervalMs = 3,
): Promise<Cut> {
  const scenario: Record<string, string> =
    by === 'client'
      ? { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': String(intervalMs) }
      : {
          'x-emulator-scenario': 'paced,stream_cut',
          'x-emulator-interval-ms': '0',
          'x-emulator-cut-after': String(after + 3),
        };
  const res = await fetch(`${stack.gateway.url}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.appKey}`,
      'content-type': 'application/json',
      'x-emulator-deltas': String(after + AHEAD),
      ...scenario,
    },
    body: JSON.stringify(body(after)),
  });
  const requestId = res.headers.get('request-id');
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let clientDeltas = 0;
  let carry = '';
  for (;;) {
    const chunk = await reader.read().catch(() => null);
    if (chunk === null || chunk.done) break;
    const events = (carry + decoder.decode(chunk.value, { stream: true })).split('\n\n');
    carry = events.pop()!;
    clientDeltas += events.filter((e) => e.startsWith('event: content_block_delta')).length;
    if (by === 'client' && clientDeltas >= after) {
      await reader.cancel();
      break;
    }
  }
  const entry = await stack.emulator.ledger.waitFor((e) => e.requestId === requestId, 10_000);
  const row = await waitFor(
    async () => (await stack.calls()).find((r) => r.upstream_request_id === requestId),
    {
      timeout: 5_000,
      what: `the call row of ${requestId}`,
    },
  );
  return { row, entry, clientDeltas };
}

/** The words of the whole reply `cutStream` asks for, one per delta, from the emulator directly. */
export async function replyWords(stack: Stack, after: number): Promise<string[]> {
  const res = await fetch(`${stack.emulator.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': PROVIDER_KEY,
      'content-type': 'application/json',
      'x-emulator-scenario': 'paced',
      'x-emulator-interval-ms': '0',
      'x-emulator-deltas': String(after + AHEAD),
    },
    body: JSON.stringify(body(after)),
  });
  return (await res.text())
    .split('\n\n')
    .filter((e) => e.startsWith('event: content_block_delta'))
    .map((e) => (JSON.parse(e.slice(e.indexOf('data: ') + 6)) as { delta: { text: string } }).delta.text);
}

function body(after: number) {
  return {
    model: 'claude-opus-4-5',
    max_tokens: after + AHEAD,
    stream: true,
    messages: [{ role: 'user', content: QUESTION }],
  };
}
