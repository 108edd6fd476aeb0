import { decodeBase64Strict } from '@keygate/pdf';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { JsonBody, LARGE_BODY, LONG_STRING } from './json-body';

const big = (data: string, extra = '') =>
  Buffer.from(
    `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","data":"${data}"}}]}]${extra}}`,
  );
const dataOf = (json: JsonBody) => (json.value as any).messages[0].content[0].source.data as string;
const base64 = (bytes: number) => randomBytes(bytes).toString('base64');
const same = (a: Buffer | null, b: Buffer | null) => a !== null && b !== null && a.equals(b);

describe('JsonBody', () => {
  it('parses a small body exactly as JSON.parse does', () => {
    const body = Buffer.from('{"a":[1,"x\\u00e9",{"b":null}]}');
    expect(JsonBody.parse(body).value).toEqual(JSON.parse(body.toString()));
  });

  it('reads every key and string of a non-ASCII body, small or large, as JSON.parse of its UTF-8 does', () => {
    const walk = (json: JsonBody, v: unknown): unknown => {
      if (typeof v === 'string') return json.text(v);
      if (Array.isArray(v)) return v.map((x) => walk(json, x));
      if (v && typeof v === 'object')
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [json.text(k), walk(json, x)]));
      return v;
    };
    const texts = ['déjà ✓ \u{1f600}', 'ĀĂ escaped: \u0100\u0102', 'a\tb\n"q"', 'tail é'];
    const raws = [
      Buffer.from(JSON.stringify({ model: 'é', k: texts, clé: { ü: texts[0] } })),
      // Escapes written by hand: \u00e9 (U+00E9) beside the UTF-8 bytes of é, and one past U+00FF.
      Buffer.from('{"a":"\\u00e9 é","b":"\\u0100é","\\u00e9":1,"é":2}'),
      Buffer.from(
        JSON.stringify({ pad: 'x'.repeat(LARGE_BODY), long: `é${'y'.repeat(LONG_STRING)}`, k: texts }),
      ),
    ];
    for (const raw of raws) {
      const json = JsonBody.parse(raw);
      expect(walk(json, json.value)).toEqual(JSON.parse(raw.toString('utf8')));
    }
  });

  it('leaves long strings of a large body in its bytes, and decodes their base64 like decodeBase64Strict', () => {
    const data = base64(LARGE_BODY);
    const json = JsonBody.parse(big(data));
    expect(dataOf(json).length).toBeLessThan(64);
    expect(json.text(dataOf(json))).toBe(data);
    expect(same(json.base64(dataOf(json)), decodeBase64Strict(data))).toBe(true);
    expect((json.value as any).model).toBe('m');
  });

  it.each([
    ['one padding character', base64(LARGE_BODY + 2)],
    ['two padding characters', base64(LARGE_BODY + 1)],
  ])('decodes with %s', (_, data) => {
    const json = JsonBody.parse(big(data));
    expect(same(json.base64(dataOf(json)), decodeBase64Strict(data))).toBe(true);
  });

  it.each([
    ['a character outside the alphabet', (d: string) => `${d.slice(0, 1000)}-${d.slice(1001)}`],
    ['padding in the middle', (d: string) => `${d.slice(0, 1000)}==${d.slice(1002)}`],
    ['a length that is not a multiple of 4', (d: string) => d.slice(1)],
    ['a character after the padding', (d: string) => `${d.slice(0, -4)}QQ=A`],
    ['a UTF-8 character', (d: string) => `${d.slice(0, -4)}QUJé`],
  ])('refuses base64 with %s, as decodeBase64Strict does', (_, spoil) => {
    const data = spoil(base64(LARGE_BODY));
    const json = JsonBody.parse(big(data));
    expect(decodeBase64Strict(data)).toBeNull();
    expect(json.base64(dataOf(json))).toBeNull();
  });

  it('reads escaped long strings by their JSON value', () => {
    const data = base64(LARGE_BODY);
    const json = JsonBody.parse(big(data.replaceAll('/', '\\/')));
    expect(json.text(dataOf(json))).toBe(data);
    expect(same(json.base64(dataOf(json)), decodeBase64Strict(data))).toBe(true);
  });

  it('throws what JSON.parse throws for bad JSON around the long strings, or a raw control character in one once it is read', () => {
    const cases: [Buffer, (json: JsonBody) => unknown][] = [
      [big(base64(LARGE_BODY), ',}'), () => {}],
      [big(base64(LARGE_BODY), '}'), () => {}],
      [big(`${'A'.repeat(LARGE_BODY)}\n`), (json) => json.base64(dataOf(json))],
      [big(`${'A'.repeat(LARGE_BODY)}\n`), (json) => json.text(dataOf(json))],
    ];
    for (const [body, read] of cases) {
      let expected = '';
      try {
        JSON.parse(body.toString());
      } catch (err) {
        expected = (err as Error).message;
      }
      expect(expected).not.toBe('');
      expect(() => read(JsonBody.parse(body))).toThrow(expected);
    }
  });

  it('does not take a string the client sent for one of its tokens', () => {
    const long = 'A'.repeat(LONG_STRING);
    const body = Buffer.from(JSON.stringify({ a: 'x'.repeat(LARGE_BODY), b: long, c: '\u0000kg0:1' }));
    const json = JsonBody.parse(body);
    const v = json.value as Record<string, string>;
    expect(json.text(v.b!)).toBe(long);
    expect(json.text(v.c!)).toBe('\u0000kg0:1');
  });
});
