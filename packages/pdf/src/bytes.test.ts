import { describe, expect, it } from 'vitest';
import {
  encodeBase64,
  indexOfText,
  lastIndexOfText,
  latin1,
  portableIndexOf,
  portableLastIndexOf,
  portableLatin1,
} from './bytes';

// The portable scans run where there is no Buffer (browsers, edge runtimes); they must agree with it.
const bytes = new Uint8Array(Buffer.from('obj 1 0 obj trailer\x00\xff\x80 1 0 obj trail', 'latin1'));

describe('byte scans without Buffer', () => {
  it.each([
    ['obj', 0],
    ['obj', 1],
    ['1 0 obj', 0],
    ['1 0 obj', 30],
    ['trailer', 0],
    ['trail', 20],
    ['nowhere', 0],
    ['obj', bytes.length],
  ])('find %j from %i as Buffer does', (text, from) => {
    expect(portableIndexOf(bytes, text, from)).toBe(indexOfText(bytes, text, from));
    expect(portableLastIndexOf(bytes, text, from)).toBe(lastIndexOfText(bytes, text, from));
    expect(portableLastIndexOf(bytes, text, bytes.length)).toBe(lastIndexOfText(bytes, text));
  });

  it('find nothing before the start', () => {
    expect(lastIndexOfText(bytes, 'obj', -1)).toBe(-1);
    expect(portableLastIndexOf(bytes, 'obj', 0)).toBe(0);
    expect(portableLastIndexOf(bytes.subarray(0, 2), 'obj', 5)).toBe(-1);
  });

  it('decode every byte value, across chunk boundaries, as latin1', () => {
    const all = new Uint8Array(20_000).map((_, i) => i % 256);
    expect(portableLatin1(all, 3, all.length)).toBe(latin1(all, 3));
    expect(portableLatin1(all, 5, 5)).toBe('');
    expect(latin1(bytes.subarray(4), 0, 7)).toBe('1 0 obj');
  });

  it('encode base64 as Buffer does', () => {
    const odd = bytes.subarray(1);
    expect(btoa(portableLatin1(odd, 0, odd.length))).toBe(encodeBase64(odd));
    expect(encodeBase64(odd)).toBe(Buffer.from(odd).toString('base64'));
  });
});
