import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';
import { errorShape, head, rawExchange, type Part, type RawResponse } from './raw-http';

/**
 * Property: whatever bytes arrive, the gateway answers in the provider's shape (or passes a
 * valid call through), never with its own 500, never by crashing, and its memory stays bounded.
 */
const MAX_BODY = 1024 * 1024;
const RUNS = Number(process.env.KEYGATE_FUZZ_RUNS ?? 300);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let stack: Stack;
let port: number;
beforeAll(async () => {
  stack = await startStack({
    KEYGATE_MAX_BODY_BYTES: String(MAX_BODY),
    KEYGATE_HEADERS_TIMEOUT_MS: '1000',
    KEYGATE_REQUEST_TIMEOUT_MS: '3000',
    KEYGATE_BODY_IDLE_MS: '500',
  });
  port = stack.gateway.port;
});
afterAll(() => stack?.close());

const PREFIX = '{"model":"claude-opus-4-5","max_tokens":16,"messages":[{"role":"user","content":';
const SUFFIX = '}]}';
const message = (content: unknown, stream = false) =>
  JSON.stringify({ model: 'claude-opus-4-5', max_tokens: 16, stream, messages: [{ role: 'user', content }] });

const ascii = (max: number) =>
  fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    maxLength: max,
  });

const validBody = fc
  .record({ text: fc.string({ minLength: 1, maxLength: 200 }), stream: fc.boolean() })
  .map(({ text, stream }) => Buffer.from(message(text, stream)));

const body: fc.Arbitrary<{ kind: string; bytes: Buffer }> = fc.oneof(
  { weight: 4, arbitrary: validBody.map((bytes) => ({ kind: 'valid', bytes })) },
  {
    weight: 3,
    arbitrary: fc.json({ depthSize: 'medium' }).map((j) => ({ kind: 'random json', bytes: Buffer.from(j) })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(validBody, fc.nat())
      .map(([b, n]) => ({ kind: 'truncated', bytes: b.subarray(0, n % b.length) })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: 50, max: 300_000 }), fc.constantFrom('[', '{"a":'), fc.boolean())
      .map(([depth, open, closed]) => {
        const close = open === '[' ? ']' : '}';
        const nest = `${open.repeat(depth)}1${closed ? close.repeat(depth) : ''}`;
        return {
          kind: `nested ${depth}${closed ? '' : ' unclosed'}`,
          bytes: Buffer.from(PREFIX + nest + SUFFIX),
        };
      }),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 64 * 1024, max: MAX_BODY + 256 * 1024 })
      .map((n) => ({ kind: `huge string ${n}`, bytes: Buffer.from(message('a'.repeat(n))) })),
  },
  {
    weight: 2,
    arbitrary: fc
      .uint8Array({ maxLength: 2_000 })
      .map((u) => ({ kind: 'random bytes', bytes: Buffer.from(u) })),
  },
  {
    weight: 2,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((u) => ({
      kind: 'invalid utf-8 in a string',
      bytes: Buffer.concat([
        Buffer.from(`${PREFIX}"abc`),
        Buffer.from(u.map((b) => b | 0x80)),
        Buffer.from(`"${SUFFIX}`),
      ]),
    })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'empty', bytes: Buffer.alloc(0) }) },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/json; charset=latin1',
  '*/*',
  '',
];

const headerName = fc
  .stringMatching(/^[a-z][a-z0-9-]{0,24}$/)
  .filter((n) => !/^(content-length|transfer-encoding|host|connection|expect|upgrade|x-emulator-)/.test(n));

/** `arb` one time in `n`, else null. */
const sometimes = <T>(arb: fc.Arbitrary<T>, n: number) =>
  fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });

const headers = fc.record({
  auth: fc.oneof(
    { weight: 6, arbitrary: fc.constant('valid') },
    { weight: 1, arbitrary: fc.constantFrom('none', 'wrong', 'provider', 'twice') },
  ),
  contentType: fc.option(fc.constantFrom(...CONTENT_TYPES)),
  extra: fc.array(fc.tuple(headerName, ascii(200)), { maxLength: 6 }),
  repeated: sometimes(
    fc.tuple(
      fc.constantFrom(
        'content-type',
        'anthropic-version',
        'keygate-group-id',
        'anthropic-beta',
        'x-api-key',
        'content-length',
      ),
      fc.integer({ min: 2, max: 50 }),
    ),
    5,
  ),
  oversized: sometimes(fc.integer({ min: 17_000, max: 80_000 }), 10),
  badByte: sometimes(fc.constantFrom('\x00', '\x7f', '\xff', '\x01'), 10),
});

type HeaderChoice = typeof headers extends fc.Arbitrary<infer T> ? T : never;

const framing = fc.oneof(
  { weight: 8, arbitrary: fc.constant('length' as const) },
  { weight: 2, arbitrary: fc.constant('chunked' as const) },
  { weight: 1, arbitrary: fc.constantFrom('short' as const, 'long' as const) },
);

const pacing = fc.oneof(
  { weight: 20, arbitrary: fc.constant(null) },
  {
    weight: 10,
    arbitrary: fc.record({
      pieces: fc.integer({ min: 2, max: 8 }),
      pauseMs: fc.integer({ min: 1, max: 30 }),
      stallMs: fc.constant(0),
    }),
  },
  // Past the headers timeout (1 s) or the body idle timeout (0.5 s): answered 408.
  {
    weight: 1,
    arbitrary: fc.record({ pieces: fc.constant(2), pauseMs: fc.constant(0), stallMs: fc.constant(1_300) }),
  },
);

type Case = {
  body: { kind: string; bytes: Buffer };
  headers: HeaderChoice;
  framing: 'length' | 'chunked' | 'short' | 'long';
  pacing: { pieces: number; pauseMs: number; stallMs: number } | null;
  path: string;
};

function request(c: Case): Part[] {
  const h: Array<[string, string]> = [
    ['host', 'gateway'],
    ['connection', 'close'],
  ];
  const key = {
    valid: stack.appKey,
    none: null,
    wrong: 'kg_live_0000000000000000000000000000000000000',
    provider: 'sk-ant-api03-notarealkeyatall',
    twice: stack.appKey,
  }[c.headers.auth];
  if (key) h.push(['authorization', `Bearer ${key}`]);
  if (c.headers.auth === 'twice') h.push(['authorization', `Bearer ${key}`]);
  if (c.headers.contentType !== null) h.push(['content-type', c.headers.contentType]);
  h.push(...c.headers.extra);
  const { bytes } = c.body;
  if (c.framing === 'chunked') h.push(['transfer-encoding', 'chunked']);
  else
    h.push([
      'content-length',
      String(
        c.framing === 'short'
          ? Math.floor(bytes.length / 2)
          : c.framing === 'long'
            ? bytes.length + 10
            : bytes.length,
      ),
    ]);
  if (c.headers.repeated) {
    const [name, times] = c.headers.repeated;
    const value =
      name === 'content-length'
        ? String(bytes.length)
        : name === 'content-type'
          ? 'application/json'
          : 'x'.repeat(times);
    for (let i = 1; i < times; i++) h.push([name, value]);
  }
  if (c.headers.oversized) h.push(['x-padding', 'p'.repeat(c.headers.oversized)]);
  if (c.headers.badByte) h.push(['x-bad', `a${c.headers.badByte}b`]);
  const payload = c.framing === 'chunked' ? chunked(bytes) : bytes;
  const all = Buffer.concat([Buffer.from(head('POST', c.path, h), 'latin1'), payload]);
  if (!c.pacing) return [all];
  const { pieces, pauseMs, stallMs } = c.pacing;
  const parts: Part[] = [];
  const size = Math.ceil(all.length / pieces);
  for (let i = 0; i < all.length; i += size) {
    if (i > 0) parts.push({ pauseMs: stallMs || pauseMs });
    parts.push(all.subarray(i, i + size));
  }
  return parts;
}

function chunked(bytes: Buffer): Buffer {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 1000) {
    const piece = bytes.subarray(i, i + 1000);
    out.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  out.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(out);
}

/** A call passed through: the provider's message, whole (JSON or a complete stream). */
function passedThrough(r: RawResponse): boolean {
  const text = r.body.toString('utf8');
  if ((r.headers['content-type'] ?? '').startsWith('text/event-stream'))
    return text.includes('event: message_stop');
  const json = JSON.parse(text);
  return json.type === 'message' || Number.isInteger(json.input_tokens);
}

describe('hostile input, property-based', () => {
  it(`${RUNS} generated requests: every one answered in the provider's shape, no crash, no 500 of ours, memory bounded`, async () => {
    const mb = (n: number) => Math.round(n / 1024 / 1024);
    // Warm up (code paths, pools), so the baseline is not the cold process.
    for (let i = 0; i < 5; i++)
      await rawExchange(port, [
        head('POST', '/v1/messages', [
          ['host', 'g'],
          ['connection', 'close'],
          ['authorization', `Bearer ${stack.appKey}`],
          ['content-length', String(Buffer.byteLength(message('warm')))],
        ]) + message('warm'),
      ]);
    const settled = () => (gc(), gc(), process.memoryUsage());
    const before = settled();
    let peak = before.rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const statuses = new Map<number, number>();
    const run = (numRuns: number) =>
      fc.assert(
        fc.asyncProperty(
          body,
          headers,
          framing,
          pacing,
          fc.constantFrom('/v1/messages', '/v1/messages?beta=true', '/v1/messages/count_tokens'),
          async (b, h, f, p, path) => {
            const c: Case = { body: b, headers: h, framing: f, pacing: p, path };
            const r = await rawExchange(port, request(c), { timeoutMs: 10_000 });
            const what = `${b.kind}, ${f}, ${JSON.stringify({ ...h, extra: h.extra.length })}`;
            expect(r.response, `no answer (${r.closed ? 'closed' : 'timed out'}) to ${what}`).not.toBeNull();
            const res = r.response!;
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status >= 200 && res.status < 300) {
              expect(passedThrough(res), what).toBe(true);
            } else {
              expect(() => errorShape(res), what).not.toThrow();
              expect(res.status, `${what}: ${res.body.toString().slice(0, 200)}`).not.toBe(500);
            }
          },
        ),
        { numRuns, endOnFailure: true },
      );
    let half: NodeJS.MemoryUsage;
    try {
      await run(RUNS / 2);
      half = settled();
      await run(RUNS / 2);
    } finally {
      clearInterval(sampler);
    }
    const after = settled();
    console.log(
      `hostile input: ${RUNS} runs; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; ` +
        `RSS before ${mb(before.rss)} MB, peak ${mb(peak)} MB, after ${mb(after.rss)} MB; heap after GC: before ${mb(before.heapUsed)} MB, half-way ${mb(half.heapUsed)} MB, after ${mb(after.heapUsed)} MB`,
    );
    // Still serving, and no error of its own was logged.
    const ok = await rawExchange(port, [
      head('GET', '/health', [
        ['host', 'g'],
        ['connection', 'close'],
      ]),
    ]);
    expect(ok.response!.status).toBe(200);
    expect(stack.logs.filter((l) => l.includes('"unhandled error"'))).toEqual([]);
    // Bounded: the peak stays within a few bodies' worth, and the second half of the runs
    // leaves no more live heap than the first (nothing is kept per request).
    expect(mb(peak - before.rss)).toBeLessThan(400);
    expect(mb(after.heapUsed - half.heapUsed)).toBeLessThan(16);
  }, 120_000);
});
