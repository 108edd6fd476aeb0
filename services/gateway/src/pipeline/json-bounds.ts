import { setImmediate as nextTurn } from 'node:timers/promises';
import { GatewayError } from '../lib/errors';
import { JsonScan } from './json-scan';

/** The deepest nesting of arrays and objects the gateway reads. */
export const MAX_JSON_DEPTH = 256;
/** The most JSON values (arrays, objects, and the items and members in them) the gateway walks. */
export const MAX_JSON_VALUES = 250_000;
// Between two turns of the event loop, at most this much of a body is scanned (a few ms).
const TURN_BYTES = 1024 * 1024;

/**
 * Refuses a body whose JSON nests deeper than MAX_JSON_DEPTH (400) or holds more than
 * MAX_JSON_VALUES values (413) before anything parses it: JSON.parse and the walks after it
 * run on the event loop, and a 30 MB body of brackets held every tenant's calls (and
 * /healthz) for seconds. The scan (json-scan.ts) skips strings 16 bytes at a time, looks at
 * each byte between them, and lets the event loop turn every MB. Malformed JSON is left to the
 * parser, whose message is the answer.
 */
export async function boundJson(body: Buffer): Promise<void> {
  await scanJson(body, null, 0);
}

/**
 * boundJson's scan, which also notes where the strings of at least `minLength` bytes lie (in
 * `long`, as start and end offsets between the quotes), and the top-level object's array and
 * object members (`top`, JsonScan.topSpans), so a reader that skips them needs no second pass.
 */
export async function boundJsonNotingLongStrings(
  body: Buffer,
  minLength: number,
): Promise<{ long: number[]; top: number[] | null }> {
  const long: number[] = [];
  const scan = await scanJson(body, long, minLength);
  return { long, top: scan.topSpans() };
}

async function scanJson(body: Buffer, long: number[] | null, minLength: number): Promise<JsonScan> {
  const scan = new JsonScan({
    maxDepth: MAX_JSON_DEPTH,
    maxValues: MAX_JSON_VALUES,
    long,
    minLength,
    top: long !== null,
  });
  for (let at = 0; at < body.length; ) {
    const to = Math.min(body.length, at + TURN_BYTES);
    const fault = scan.scan(body, at, to);
    if (fault === 'deep') throw tooDeep();
    if (fault === 'many') throw tooMany();
    at = to;
    if (at < body.length) await nextTurn();
  }
  return scan;
}

const tooDeep = () =>
  new GatewayError(
    'invalid_request_error',
    `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, the most this gateway reads.`,
  );

const tooMany = () =>
  new GatewayError(
    'request_too_large',
    `Request body holds more than ${MAX_JSON_VALUES.toLocaleString('en')} JSON values, the most this gateway walks.`,
  );
