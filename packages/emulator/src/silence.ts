import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { invalid } from './errors';

const PING = 'event: ping\ndata: {"type": "ping"}\n\n';
const FIRST_DELTA = 'event: content_block_delta\n';

/**
 * long_silence: the stream stops after its first content delta for `x-emulator-silence-ms`
 * (default 2000), as the provider does while it thinks at length, then goes on. With
 * `x-emulator-ping-ms` the provider's pings come during the silence at that interval; without
 * it, nothing does (a silence longer than a proxy's read timeout is an upstream that stopped
 * answering). The stream is written whole by the stream writer; this holds back its tail.
 */
export function holdMidStream(res: ServerResponse, headers: IncomingHttpHeaders): void {
  const silenceMs = num(headers, 'x-emulator-silence-ms', 2_000);
  const pingMs = num(headers, 'x-emulator-ping-ms', 0);
  const end = res.end.bind(res) as (chunk?: string) => ServerResponse;
  res.end = function endAfterSilence(this: ServerResponse, chunk?: unknown) {
    const body = typeof chunk === 'string' ? chunk : '';
    const at = body.indexOf(FIRST_DELTA);
    const cut = at === -1 ? -1 : body.indexOf('\n\n', at);
    if (cut === -1) return end(body);
    res.write(body.slice(0, cut + 2));
    const pings = pingMs > 0 ? setInterval(() => res.write(PING), pingMs) : null;
    const resume = setTimeout(() => {
      if (pings) clearInterval(pings);
      if (!res.destroyed) end(body.slice(cut + 2));
    }, silenceMs);
    res.once('close', () => {
      clearTimeout(resume);
      if (pings) clearInterval(pings);
    });
    return res;
  } as ServerResponse['end'];
}

function num(headers: IncomingHttpHeaders, name: string, fallback: number): number {
  const raw = headers[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw invalid(`${name}: expected an integer >= 0, got '${String(raw)}'`);
  return value;
}
