import type { ServerResponse } from 'node:http';
import type { HeaderList } from './http';
import type { Ledger } from './ledger';
import type { Plan } from './reply';
import type { Scenario } from './scenarios';
import { buildEvents, foldUsage, OVERLOADED_ERROR, type StreamEvent } from './stream-events';
import type { LedgerEntry, Usage } from './types';

/**
 * Writes `plan` as server-sent events, shaped by the request's scenarios, and keeps the
 * ledger entry to what really went out: usage is folded only over written events, and the
 * entry is finalised when the stream ends, errors, is cut, or the client leaves. A stream that
 * stops before its message_delta bills, as the provider does, the output tokens of the deltas
 * generated so far: writing stops as soon as the client is gone.
 */
export function writeStream(
  res: ServerResponse,
  headers: HeaderList,
  plan: Plan,
  scenario: Scenario,
  entry: LedgerEntry,
  ledger: Ledger,
): void {
  let events = buildEvents(plan, scenario);
  if (scenario.has.has('stream_error')) events = withMidStreamError(events);
  const cutAfter = scenario.has.has('stream_cut') ? Math.min(scenario.cutAfter, events.length - 1) : Infinity;
  const completes = events[events.length - 1]!.kind === 'message_stop';
  entry.stream = true;
  entry.status = 200;
  res.writeHead(200, headers);

  // Fast path (no pacing, no cut): one write for the whole stream.
  if (cutAfter === Infinity && !scenario.has.has('paced')) {
    if (res.destroyed) return ledger.close(entry, false, Date.now());
    let usage: Usage | null = null;
    let generated = 0;
    let body = '';
    for (const event of events) {
      body += event.frame;
      usage = foldUsage(usage, event);
      generated += event.tokens ?? 0;
      if (event.kind === 'error') entry.errorType = 'overloaded_error';
    }
    entry.eventsSent = events.length;
    res.end(body);
    return ledger.close(entry, completes, Date.now(), completes ? usage : billedSoFar(usage, generated));
  }

  let next = 0;
  let timer: NodeJS.Timeout | undefined;
  let usage: Usage | null = null;
  let generated = 0;
  const finish = (complete: boolean) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    ledger.close(entry, complete, Date.now(), complete ? usage : billedSoFar(usage, generated));
  };
  res.on('close', () => finish(false));

  const pump = (waited: boolean): void => {
    timer = undefined;
    // The peer may have gone while we waited: never write to a closed response.
    if (res.destroyed) return finish(false);
    let chunk = '';
    while (next < events.length) {
      const event = events[next]!;
      if (event.delayMs > 0 && !waited) break;
      waited = false;
      chunk += event.frame;
      usage = foldUsage(usage, event);
      generated += event.tokens ?? 0;
      if (event.kind === 'error') entry.errorType = 'overloaded_error';
      entry.eventsSent++;
      next++;
      if (entry.eventsSent === cutAfter) break;
    }
    if (entry.eventsSent === cutAfter) {
      finish(false);
      // Destroy only once the bytes are handed to the kernel, so the client sees them first.
      res.write(chunk, () => res.destroy());
      return;
    }
    if (next === events.length) {
      res.end(chunk);
      return finish(completes);
    }
    if (chunk !== '') res.write(chunk);
    timer = setTimeout(pump, events[next]!.delayMs, true);
  };
  pump(false);
}

/** A stream stopped early: the last count sent, or the tokens generated if more (never lowered). */
function billedSoFar(usage: Usage | null, generated: number): Usage | null {
  return usage && { ...usage, output_tokens: Math.max(usage.output_tokens, generated) };
}

/** stream_error: message_start, some deltas, then the provider's overloaded error event. */
function withMidStreamError(events: StreamEvent[]): StreamEvent[] {
  const deltas = events.filter((e) => e.kind === 'content_block_delta').length;
  let keep = Math.max(1, Math.floor(deltas / 2));
  let end = events.findIndex((e) => e.kind === 'content_block_delta' && --keep === 0);
  if (end === -1) end = events.findIndex((e) => e.kind === 'message_start');
  return [...events.slice(0, end + 1), OVERLOADED_ERROR];
}
