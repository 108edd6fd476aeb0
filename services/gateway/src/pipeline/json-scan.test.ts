import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { JsonScan, type ScanFault } from './json-scan';

/**
 * What the scan must find, written the plain way: a byte at a time, a backslash taking the byte
 * after it, the long strings' offsets between their quotes.
 */
function oracle(
  body: Uint8Array,
  o: { maxDepth: number; maxValues: number; minLength: number },
): { fault: ScanFault; long: number[]; top: number[] } {
  const long: number[] = [];
  // The brackets that open a depth of 2 and close back to 1, as JsonScan notes them.
  const top: number[] = [];
  let depth = 0;
  let values = 0;
  for (let i = 0; i < body.length; i++) {
    const b = body[i];
    if (b === 0x22) {
      const start = i + 1;
      let j = start;
      while (j < body.length && body[j] !== 0x22) j += body[j] === 0x5c ? 2 : 1;
      if (j >= body.length) return { fault: null, long, top };
      if (j - start >= o.minLength) long.push(start, j);
      i = j;
    } else if (b === 0x5b || b === 0x7b) {
      if (++depth > o.maxDepth) return { fault: 'deep', long, top };
      if (++values > o.maxValues) return { fault: 'many', long, top };
      if (depth === 2) top.push(i);
    } else if (b === 0x5d || b === 0x7d) {
      if (--depth === 1) top.push(-1 - i);
    } else if (b === 0x2c && ++values > o.maxValues) return { fault: 'many', long, top };
  }
  return { fault: null, long, top };
}

/** A deterministic generator, so a failure names the seed that made it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

// Bytes the scan treats apart, and filler, weighted so runs of backslashes and quotes are common.
const ALPHABET = Buffer.from('""\\\\\\[]{},:ab 1\n\u00e9');

function body(rand: () => number, size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; ) {
    // Long plain runs too, so the 16-byte steps and the window edges meet every kind of byte.
    if (rand() < 0.05) {
      const run = Math.min(size - i, Math.floor(rand() * 3000));
      out.fill(0x78, i, i + run);
      i += run;
    } else out[i++] = ALPHABET[Math.floor(rand() * ALPHABET.length)]!;
  }
  return out;
}

/** Scans in parts cut at random places, as a body read chunk by chunk would be. */
function scanInParts(
  rand: () => number,
  b: Buffer,
  o: { maxDepth: number; maxValues: number; minLength: number },
) {
  const long: number[] = [];
  const scan = new JsonScan({ ...o, long, top: true });
  let fault: ScanFault = null;
  for (let at = 0; at < b.length && !fault; ) {
    const to = Math.min(b.length, at + 1 + Math.floor(rand() * 70_000));
    fault = scan.scan(b, at, to);
    at = to;
  }
  return { fault, long, spans: scan.topSpans() };
}

describe('the WebAssembly bounds scan (json-scan.wat)', () => {
  it('finds what the byte-at-a-time reading finds, whatever the parts and windows', () => {
    const checked = { spans: 0 };
    for (let seed = 1; seed <= 60; seed++) {
      const rand = random(seed);
      const b = body(rand, seed % 10 === 0 ? 600_000 : Math.floor(rand() * 40_000));
      const o = {
        maxDepth: seed % 3 === 0 ? 4 : 1_000_000,
        maxValues: seed % 4 === 0 ? 200 : 10_000_000,
        // Small lengths fill a window's room for string ends; the window shrinks to fit.
        minLength: [0, 1, 7, 64, 1024][seed % 5]!,
      };
      const want = oracle(b, o);
      const got = scanInParts(rand, b, o);
      // A fault refuses the body: what was noted before it is not read.
      if (want.fault) {
        expect({ seed, fault: got.fault }).toEqual({ seed, fault: want.fault });
        continue;
      }
      expect({ seed, long: got.long }).toEqual({ seed, long: want.long });
      // Brackets that pair up (an opening then a closing, in turn) are spans; anything else is none.
      const paired = want.top.length % 2 === 0 && want.top.every((at, i) => (i % 2 === 0 ? at >= 0 : at < 0));
      const spans = paired ? want.top.map((at, i) => (i % 2 === 0 ? at : -1 - at)) : null;
      // More than 64 in one window are not noted: then none are answered.
      if (want.top.length <= 64 || got.spans !== null)
        expect({ seed, spans: got.spans }).toEqual({ seed, spans });
      checked.spans += spans?.length ? 1 : 0;
    }
    // The random bodies must also have held spans to compare.
    expect(checked.spans).toBeGreaterThan(5);
  });

  it('notes the top-level object’s array and object members, and none when they are too many to note', () => {
    const b = Buffer.from('{"model":"m","system":[{"a":[1]}], "tools" : {"x":{}},"n":[]}');
    const scan = new JsonScan({ long: [], minLength: 1024, top: true });
    expect(scan.scan(b, 0, b.length)).toBeNull();
    const at = (s: string) => b.indexOf(s);
    expect(scan.topSpans()).toEqual([
      at('[{'),
      at('}]') + 1,
      at('{"x"'),
      at('}}') + 1,
      at('[]'),
      at('[]') + 1,
    ]);
    const many = Buffer.from(`{${Array.from({ length: 65 }, (_, i) => `"k${i}":[]`).join(',')}}`);
    const over = new JsonScan({ long: [], minLength: 1024, top: true });
    expect(over.scan(many, 0, many.length)).toBeNull();
    expect(over.topSpans()).toBeNull();
  });

  it('carries an escape across a part’s edge: a backslash last in one part escapes the next part’s quote', () => {
    const b = Buffer.from(`{"a":"${'x'.repeat(300)}\\"${'y'.repeat(10)}","b":[1]}`);
    const cut = b.indexOf('\\') + 1;
    const end = b.indexOf('"', cut + 1);
    for (const parts of [
      [0, b.length],
      [0, cut, b.length],
    ]) {
      const long: number[] = [];
      const scan = new JsonScan({ maxDepth: 2, long, minLength: 100 });
      for (let i = 1; i < parts.length; i++) expect(scan.scan(b, parts[i - 1]!, parts[i]!)).toBeNull();
      // Taken as the end, the escaped quote would end the string at `cut`.
      expect(long).toEqual([6, end]);
    }
  });

  it('keeps two bodies apart when their scans take turns', () => {
    const rand = random(99);
    const a = body(rand, 500_000);
    const c = body(rand, 500_000);
    const o = { maxDepth: 1_000_000, maxValues: 10_000_000, minLength: 64 };
    const la: number[] = [];
    const lc: number[] = [];
    const sa = new JsonScan({ ...o, long: la });
    const sc = new JsonScan({ ...o, long: lc });
    for (let at = 0; at < a.length; at += 100_000) {
      sa.scan(a, at, Math.min(a.length, at + 100_000));
      sc.scan(c, at, Math.min(c.length, at + 100_000));
    }
    expect(la).toEqual(oracle(a, o).long);
    expect(lc).toEqual(oracle(c, o).long);
  });

  it('is the assembly of json-scan.wat that is committed', async () => {
    const script = new URL('../../../../scripts/build-wasm.mjs', import.meta.url);
    const { assemble } = (await import(script.href)) as { assemble(): Promise<string> };
    const committed = readFileSync(new URL('./json-scan-wasm.ts', import.meta.url), 'utf8');
    // Differs when the .wat was edited without `node scripts/build-wasm.mjs`.
    expect(committed).toBe(await assemble());
  });
});
