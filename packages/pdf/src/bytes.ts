// Byte scans over a Uint8Array that run in every runtime the SDK runs in (browsers and edge
// runtimes have no Buffer). Where Buffer exists (Node, Bun, Deno) its native search is used:
// on 32 MB of hostile input a scan in JavaScript takes seconds where Buffer takes milliseconds.
const NodeBuffer = (globalThis as { Buffer?: typeof import('node:buffer').Buffer }).Buffer;

const view = (bytes: Uint8Array) => NodeBuffer!.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The bytes from `start` to `end` as one character each (ISO-8859-1). */
export function latin1(bytes: Uint8Array, start = 0, end = bytes.length): string {
  const to = Math.min(end, bytes.length);
  if (to <= start) return '';
  if (NodeBuffer) return view(bytes).toString('latin1', start, to);
  return portableLatin1(bytes, start, to);
}

/** First position at or after `from` where the ASCII `text` starts, or -1. */
export function indexOfText(bytes: Uint8Array, text: string, from = 0): number {
  if (NodeBuffer) return view(bytes).indexOf(text, from, 'latin1');
  return portableIndexOf(bytes, text, from);
}

/** Last position at or before `from` where the ASCII `text` starts, or -1. */
export function lastIndexOfText(bytes: Uint8Array, text: string, from = bytes.length): number {
  if (from < 0) return -1;
  if (NodeBuffer) return view(bytes).lastIndexOf(text, from, 'latin1');
  return portableLastIndexOf(bytes, text, from);
}

const CHUNK = 8192;

export function portableLatin1(bytes: Uint8Array, start: number, end: number): string {
  let text = '';
  for (let at = start; at < end; at += CHUNK) {
    text += String.fromCharCode.apply(
      null,
      bytes.subarray(at, Math.min(end, at + CHUNK)) as unknown as number[],
    );
  }
  return text;
}

export function portableIndexOf(bytes: Uint8Array, text: string, from: number): number {
  const first = text.charCodeAt(0);
  const last = bytes.length - text.length;
  for (
    let at = bytes.indexOf(first, Math.max(0, from));
    at !== -1 && at <= last;
    at = bytes.indexOf(first, at + 1)
  ) {
    if (matchesAt(bytes, at, text)) return at;
  }
  return -1;
}

export function portableLastIndexOf(bytes: Uint8Array, text: string, from: number): number {
  const first = text.charCodeAt(0);
  const start = Math.min(from, bytes.length - text.length);
  if (start < 0) return -1;
  for (
    let at = bytes.lastIndexOf(first, start);
    at !== -1;
    at = at === 0 ? -1 : bytes.lastIndexOf(first, at - 1)
  ) {
    if (matchesAt(bytes, at, text)) return at;
  }
  return -1;
}

function matchesAt(bytes: Uint8Array, at: number, text: string): boolean {
  for (let i = 1; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
}

/** Standard, padded base64 of the bytes. */
export function encodeBase64(bytes: Uint8Array): string {
  if (NodeBuffer) return view(bytes).toString('base64');
  return btoa(portableLatin1(bytes, 0, bytes.length));
}
