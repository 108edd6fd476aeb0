import pako from 'pako';

// zlib's Z_SYNC_FLUSH: accept a stream cut short or followed by stray bytes, as viewers do.
const Z_SYNC_FLUSH = 2;

/**
 * Inflates zlib data (a FlateDecode stream) into at most `maxOutputLength` bytes; null when the
 * data is corrupt or inflates to more. pako (already brought in by pdf-lib) runs in every runtime;
 * node:zlib does not run in browsers.
 */
export function inflateAtMost(data: Uint8Array, maxOutputLength: number): Uint8Array | null {
  const inflator = new pako.Inflate({ chunkSize: 64 * 1024 });
  const keep = inflator.onData.bind(inflator);
  let size = 0;
  inflator.onData = (chunk) => {
    size += chunk.length;
    // pako calls onData from inside push(): throwing is the only way to stop it early.
    if (size > maxOutputLength) throw new RangeError('inflate budget exceeded');
    keep(chunk);
  };
  try {
    inflator.push(data, Z_SYNC_FLUSH);
  } catch {
    return null;
  }
  return inflator.err ? null : (inflator.result as Uint8Array);
}
