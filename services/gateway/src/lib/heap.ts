import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what a full collection left live, in percent
 * (V8's `--heap-growing-percent`): 100, twice what was live.
 *
 * Without it V8 picks the factor itself, from how fast the program allocates on its heap
 * against how fast it collects. A gateway allocates mostly off that heap (request bodies are
 * Buffers), and the estimate counts quiet time too: after 20 s without calls, V8 measured
 * 19-41 bytes per ms, chose a factor of 1.1, and the next calls found the limit a few MB above
 * what was live. Every few calls then started a full marking: a mark-compact every 60-100 ms,
 * and 600 KB calls at one connection took 4.1 ms of CPU each instead of 1.4 (bench/RESULTS.md,
 * "2026-11-29 late"). V8 reads the flag at each collection, so setting it at run time takes effect.
 */
export const HEAP_GROWING_PERCENT = 100;

/** Sets the growing factor for this process (every thread's heap); setting it again changes nothing. */
export function tuneHeap(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
