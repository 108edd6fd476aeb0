import { JSON_SCAN_WASM } from './json-scan-wasm';

// The layout of json-scan.wat's memory: the window, the long strings and the top-level
// brackets found in it, the state.
const WINDOW = 256 * 1024;
const OUT_PAIRS = 4096;
const OUT = WINDOW;
const TOP = OUT + OUT_PAIRS * 8;
const TOP_CAP = 64;
const STATE = TOP + TOP_CAP * 4;
// What carries over from one window to the next (the rest of the state is what a window found);
// its last slot says the top-level brackets were too many to note.
const CARRIED = 6;
const OVERFLOWED = 5;
const I32_MAX = 0x7fff_ffff;

interface Scanner {
  scan(len: number, base: number, minLength: number, maxDepth: number, maxValues: number): number;
  bytes: Uint8Array;
  /** The long strings found in the last window, as i32 pairs. */
  out: Int32Array;
  /** The top-level brackets met in the last window. */
  top: Int32Array;
  /**
   * depth, values, in a string, the escaped byte carried over, the open string's start, the
   * top-level brackets overflowed; long strings and top-level brackets found in the window.
   */
  state: Int32Array;
}

let scanner: Scanner | null = null;

// Node's WebAssembly, typed as far as it is used here (the project's TypeScript libs have no DOM).
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
interface WasmApi {
  Module: new (code: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}

/** This thread's instance (546 bytes of code, 320 KB of memory), made on first use. */
function instance(): Scanner {
  if (scanner) return scanner;
  const module = new wasm.Module(Buffer.from(JSON_SCAN_WASM, 'base64'));
  const exports = new wasm.Instance(module, {}).exports as {
    memory: { buffer: ArrayBuffer };
    scan: Scanner['scan'];
  };
  const buffer = exports.memory.buffer;
  scanner = {
    scan: exports.scan,
    bytes: new Uint8Array(buffer, 0, WINDOW),
    out: new Int32Array(buffer, OUT, OUT_PAIRS * 2),
    top: new Int32Array(buffer, TOP, TOP_CAP),
    state: new Int32Array(buffer, STATE, CARRIED + 2),
  };
  return scanner;
}

/** What a scan found wrong: nested past `maxDepth`, or more than `maxValues` values. */
export type ScanFault = 'deep' | 'many' | null;

/**
 * One JSON body's bounds scan, in parts of any size and in order (json-scan.wat does the work):
 * the depth of arrays and objects, the number of values (arrays, objects, the items and members
 * in them), and, when `long` is given, where each string of at least `minLength` bytes lies
 * (start and end offsets between its quotes). With `top`, it also notes the arrays and objects
 * that are the top-level object's members: start and end offsets, brackets included
 * (`topSpans`). Malformed JSON is not judged: that is the parser's. Its state lives here between
 * parts, so scans of several bodies can take turns.
 */
export class JsonScan {
  readonly #maxDepth: number;
  readonly #maxValues: number;
  readonly #long: number[] | null;
  readonly #minLength: number;
  readonly #window: number;
  readonly #state = new Int32Array(CARRIED);
  /** The top-level brackets met so far, as json-scan.wat notes them; null when not asked for. */
  readonly #top: number[] | null;

  constructor(o: {
    maxDepth?: number;
    maxValues?: number;
    long?: number[] | null;
    minLength?: number;
    top?: boolean;
  }) {
    this.#top = o.top ? [] : null;
    this.#maxDepth = o.maxDepth ?? I32_MAX;
    this.#maxValues = o.maxValues ?? I32_MAX;
    this.#long = o.long ?? null;
    this.#minLength = this.#long ? Math.max(0, o.minLength ?? 0) : I32_MAX;
    // A window holds at most one string end per minLength + 2 bytes (and the one open at its
    // start): sized so their pairs always fit the memory's room for them.
    this.#window = Math.min(WINDOW, (OUT_PAIRS - 1) * (Math.min(this.#minLength, WINDOW) + 2));
  }

  /** Scans `body` from `from` to `to`; answers what was found wrong, or null. */
  scan(body: Uint8Array, from: number, to: number): ScanFault {
    const w = instance();
    const state = this.#state;
    for (let at = from; at < to; ) {
      const len = Math.min(this.#window, to - at);
      w.bytes.set(body.subarray(at, at + len));
      w.state.set(state);
      const result = w.scan(len, at, this.#minLength, this.#maxDepth, this.#maxValues);
      if (result === 1) return 'deep';
      if (result === 2) return 'many';
      state.set(w.state.subarray(0, CARRIED));
      const found = w.state[CARRIED]!;
      const long = this.#long;
      if (long) for (let i = 0; i < found * 2; i++) long.push(w.out[i]!);
      const top = this.#top;
      if (top) for (let i = 0, n = w.state[CARRIED + 1]!; i < n; i++) top.push(w.top[i]!);
      at += len;
    }
    return null;
  }

  /**
   * The top level's array and object members as start and end offsets (brackets included), in
   * order; null when they were not asked for, were too many to note, or do not pair up (the
   * brackets of malformed JSON).
   */
  topSpans(): number[] | null {
    const top = this.#top;
    if (!top || this.#state[OVERFLOWED] !== 0 || top.length % 2 !== 0) return null;
    const spans: number[] = [];
    for (let i = 0; i < top.length; i += 2) {
      if (top[i]! < 0 || top[i + 1]! >= 0) return null;
      spans.push(top[i]!, -1 - top[i + 1]!);
    }
    return spans;
  }
}
