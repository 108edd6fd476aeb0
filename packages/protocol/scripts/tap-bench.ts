/**
 * Cost of reading a stream with SseUsageTap, in ns per SSE event:
 *   pnpm exec tsx packages/protocol/scripts/tap-bench.ts [git-rev]
 * Streams shaped like the provider's (text deltas of a few words, tool input in short JSON
 * pieces), fed one event per chunk (paced streams) and in 4 KB network chunks (bursts). With a
 * git revision, that revision's tap is measured too, rounds interleaved, so a loaded machine
 * slows both alike.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SseUsageTap } from '../src/usage-tap';

interface Tap {
  write(chunk: Uint8Array): void;
  end(): void;
}
type TapClass = new () => Tap;

const frame = (event: string, data: string) => `event: ${event}\ndata: ${data}\n\n`;
const WORDS =
  'The quick brown fox jumps over the lazy dog while “Grüße” and naïve café-goers watch, then\nnotes: "quoted" text.'.split(
    ' ',
  );

function stream(deltas: number, kind: 'text' | 'tool'): Buffer[] {
  const events = [
    frame(
      'message_start',
      JSON.stringify({
        type: 'message_start',
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-x',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: 377,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 1,
            service_tier: 'standard',
          },
        },
      }),
    ),
    frame(
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    ),
    'event: ping\ndata: {"type": "ping"}\n\n',
  ];
  for (let i = 0; i < deltas; i++) {
    const delta =
      kind === 'text'
        ? {
            type: 'text_delta',
            text: ` ${WORDS[i % WORDS.length]} ${WORDS[(i + 3) % WORDS.length]} ${WORDS[(i + 7) % WORDS.length]}`,
          }
        : {
            type: 'input_json_delta',
            partial_json: JSON.stringify({ city: WORDS[i % WORDS.length] }).slice(0, 12),
          };
    events.push(
      frame('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: 0, delta })),
    );
  }
  events.push(frame('content_block_stop', '{"type":"content_block_stop","index":0}'));
  events.push(
    frame(
      'message_delta',
      '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":300}}',
    ),
  );
  events.push(frame('message_stop', '{"type":"message_stop"}'));
  return events.map((e) => Buffer.from(e));
}

function chunked(events: Buffer[], size: number): Buffer[] {
  const all = Buffer.concat(events);
  const out: Buffer[] = [];
  for (let at = 0; at < all.length; at += size) out.push(all.subarray(at, at + size));
  return out;
}

/** The tap of another revision, from git, in a temp dir with the files it imports. */
async function tapAt(rev: string): Promise<TapClass> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-bench-'));
  for (const file of ['usage-tap.ts', 'usage.ts', 'output-estimate.ts']) {
    try {
      writeFileSync(
        join(dir, file),
        execFileSync('git', ['show', `${rev}:packages/protocol/src/${file}`], {
          stdio: ['ignore', 'pipe', 'ignore'],
        }),
      );
    } catch {
      // Not in that revision.
    }
  }
  return ((await import(join(dir, 'usage-tap.ts'))) as { SseUsageTap: TapClass }).SseUsageTap;
}

function nsPerEvent(Tap: TapClass, chunks: Buffer[], events: number, reps: number): number {
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) {
    const tap = new Tap();
    for (const c of chunks) tap.write(c);
    tap.end();
  }
  return ((performance.now() - t0) * 1e6) / (reps * events);
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function measure(name: string, taps: TapClass[], chunks: Buffer[], events: number): void {
  for (const Tap of taps) nsPerEvent(Tap, chunks, events, 300);
  const samples: number[][] = taps.map(() => []);
  for (let round = 0; round < 21; round++)
    taps.forEach((Tap, i) => samples[i]!.push(nsPerEvent(Tap, chunks, events, 100)));
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  console.log(
    `| ${name} | ${Math.round(bytes / events)} | ${samples.map((s) => median(s).toFixed(0)).join(' | ')} |`,
  );
}

const rev = process.argv[2];
const taps: TapClass[] = [SseUsageTap, ...(rev ? [await tapAt(rev)] : [])];
console.log(`| stream (306 events) | bytes/event | ns/event, this tree${rev ? ` | ns/event, ${rev}` : ''} |`);
console.log(`|---|---:|---:${rev ? '|---:' : ''}|`);
for (const kind of ['text', 'tool'] as const) {
  const events = stream(300, kind);
  measure(`${kind} deltas, one event per chunk`, taps, events, events.length);
  measure(`${kind} deltas, 4 KB chunks`, taps, chunked(events, 4096), events.length);
}
