import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
// One syscall per 4 KB of randomness instead of one per id: ids are minted on every request.
const pool = Buffer.allocUnsafe(4096);
let cursor = pool.length;

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    if (cursor === pool.length) {
      randomFillSync(pool);
      cursor = 0;
    }
    const byte = pool[cursor++]!;
    // 248 = 4 × 62: rejecting the rest keeps every character equally likely.
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

export const newRequestId = (): string => `req_01${randomBase62(22)}`;
export const newMessageId = (): string => `msg_01${randomBase62(22)}`;
export const newToolUseId = (): string => `toolu_01${randomBase62(22)}`;
export const newServerToolUseId = (): string => `srvtoolu_01${randomBase62(22)}`;
