import { createHash, hash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomBase62, toBase62 } from '../lib/ids';
import type { KeyKind } from '../tenancy/key-queries';

export type { KeyKind };

const RANDOM_LENGTH = 32; // 32 base62 characters ≈ 190 bits
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^kg_(live|test|admin)_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

// The checksum is CRC-32 (IEEE): enough for a scanner to tell a real key from a look-alike offline.

export function generateKey(kind: KeyKind): string {
  const random = randomBase62(RANDOM_LENGTH);
  return `kg_${kind}_${random}${toBase62(crc32(random), CHECKSUM_LENGTH)}`;
}

/** The kind of a well-formed key with a valid checksum, else null. */
export function parseKey(token: string): KeyKind | null {
  const m = KEY_PATTERN.exec(token);
  if (!m) return null;
  return toBase62(crc32(m[2]!), CHECKSUM_LENGTH) === m[3] ? (m[1] as KeyKind) : null;
}

export function hashKey(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The same hash in hex, as the key cache is keyed: one call, no Hash object (it runs on every call). */
export function hashKeyHex(token: string): string {
  return hash('sha256', token, 'hex');
}

/** What listings show: the prefix and the last four characters. */
export function keyHint(token: string): string {
  const kind = token.slice(0, token.indexOf('_', 3) + 1);
  return `${kind}…${token.slice(-4)}`;
}

export function looksLikeProviderKey(token: string): boolean {
  return token.startsWith('sk-ant-');
}
