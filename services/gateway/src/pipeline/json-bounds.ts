import { setImmediate as nextTurn } from 'node:timers/promises';
import { GatewayError } from '../lib/errors';
import { isEscaped } from './json-body';

/** The deepest nesting of arrays and objects the gateway reads. */
export const MAX_JSON_DEPTH = 256;
/** The most JSON values (arrays, objects, and the items and members in them) the gateway walks. */
export const MAX_JSON_VALUES = 250_000;
// Between two turns of the event loop, at most this much of a body is scanned (a few ms).
const TURN_BYTES = 1024 * 1024;

const QUOTE = 0x22;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/**
 * Refuses a body whose JSON nests deeper than MAX_JSON_DEPTH (400) or holds more than
 * MAX_JSON_VALUES values (413) before anything parses it: JSON.parse and the walks after it
 * run on the event loop, and a 30 MB body of brackets held every tenant's calls (and
 * /healthz) for seconds. The scan skips strings with native indexOf, looks only at the bytes
 * between them, and lets the event loop turn every MB. Malformed JSON is left to the parser,
 * whose message is the answer.
 */
export function boundJson(body: Buffer): Promise<void> {
  return scanJson(body, null, 0);
}

/**
 * boundJson's scan, which also notes where the strings of at least `minLength` bytes lie (in
 * `long`, as start and end offsets between the quotes), so a reader that skips them needs no
 * second pass over the body.
 */
export function boundJsonNotingLongStrings(body: Buffer, minLength: number): Promise<number[]> {
  const long: number[] = [];
  return scanJson(body, long, minLength).then(() => long);
}

async function scanJson(body: Buffer, long: number[] | null, minLength: number): Promise<void> {
  let depth = 0;
  let values = 0;
  let pos = 0;
  let turn = TURN_BYTES;
  const end = body.length;
  while (pos < end) {
    const open = body.indexOf(QUOTE, pos);
    const stop = open === -1 ? end : open;
    while (pos < stop) {
      const until = Math.min(stop, turn);
      for (; pos < until; pos++) {
        const b = body[pos];
        if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
          if (++depth > MAX_JSON_DEPTH) throw tooDeep();
          if (++values > MAX_JSON_VALUES) throw tooMany();
        } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) depth--;
        else if (b === COMMA && ++values > MAX_JSON_VALUES) throw tooMany();
      }
      if (pos >= turn) {
        turn = pos + TURN_BYTES;
        await nextTurn();
      }
    }
    if (open === -1) return;
    let close = body.indexOf(QUOTE, open + 1);
    while (close !== -1 && isEscaped(body, close)) {
      if (close >= turn) {
        turn = close + TURN_BYTES;
        await nextTurn();
      }
      close = body.indexOf(QUOTE, close + 1);
    }
    if (close === -1) return;
    if (long !== null && close - open - 1 >= minLength) long.push(open + 1, close);
    pos = close + 1;
    if (pos >= turn) {
      turn = pos + TURN_BYTES;
      await nextTurn();
    }
  }
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
