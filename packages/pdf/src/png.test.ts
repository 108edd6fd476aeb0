import { crc32, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { makeGradientPng } from './png';

describe('makeGradientPng', () => {
  it('writes a PNG whose chunks carry correct CRCs and a full image', () => {
    const png = Buffer.from(makeGradientPng(5, 3));
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

    const chunks: Array<{ type: string; data: Buffer }> = [];
    for (let at = 8; at < png.length; ) {
      const length = png.readUInt32BE(at);
      const body = png.subarray(at + 4, at + 8 + length);
      expect(png.readUInt32BE(at + 8 + length)).toBe(crc32(body));
      chunks.push({ type: body.subarray(0, 4).toString('latin1'), data: body.subarray(4) });
      at += 12 + length;
    }

    expect(chunks.map((chunk) => chunk.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    const [header, data] = chunks;
    expect(header?.data.readUInt32BE(0)).toBe(5);
    expect(header?.data.readUInt32BE(4)).toBe(3);
    expect(inflateSync(data?.data ?? Buffer.alloc(0)).length).toBe(3 * (1 + 5 * 3));
  });
});
