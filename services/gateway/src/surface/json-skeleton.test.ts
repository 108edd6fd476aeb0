import { describe, expect, it } from 'vitest';
import { fileRefs } from './file-refs';
import { boundJsonNotingLongStrings } from '../pipeline/json-bounds';
import { JsonBody, LARGE_BODY, LONG_STRING } from '../pipeline/json-body';
import { readMessagesBody, skippableMembers } from '../proxy/validate';

// A large body leaves every string of LONG_STRING bytes or more in its bytes (a token stands for
// it in the parsed skeleton). These cases hold the skeleton to what JSON.parse of the whole body
// reads and refuses, with the strings a scanner gets wrong: escapes, quotes and brackets inside
// strings, non-ASCII, escaped keys, strings cut short.

/** The parsed body with every token and string read back by its value (`text()`), keys included. */
function readBack(json: JsonBody, v: unknown): unknown {
  if (typeof v === 'string') return json.text(v);
  if (Array.isArray(v)) return v.map((x) => readBack(json, x));
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [json.text(k), readBack(json, x)]));
  return v;
}

/** JsonBody as the messages route runs it: the bounds scan notes the long strings, the parse skips them. */
async function parsed(body: Buffer): Promise<JsonBody> {
  return JsonBody.parse(body, { longStrings: (await boundJsonNotingLongStrings(body, LONG_STRING)).long });
}

const pad = (n: number) => 'x'.repeat(n);
/** A JSON text of at least LARGE_BODY bytes around `inner` (raw JSON, placed as the value of `k`). */
const large = (inner: string) => `{"model":"m","pad":"${pad(LARGE_BODY)}","k":${inner}}`;
const long = (s: string) => s.repeat(Math.ceil((LONG_STRING + 10) / s.length));

const tricky = [
  long('line\\n\\t\\"quoted\\" \\\\ back\\/slash '),
  long('brackets ] } [ { , : inside '),
  long('é ✓ 😀 \\u00e9 \\u0100 \\ud83d\\ude00 '),
  long('\\\\'),
  `${long('a')}\\\\`,
  `\\"${long('b')}\\"`,
];

describe('JsonBody on a large body', () => {
  it('reads every string and key as JSON.parse of the whole body does', async () => {
    const bodies = [
      large(`[${tricky.map((s) => `"${s}"`).join(',')}]`),
      // Long keys, a key repeated (the last one wins), an escaped short key.
      large(`{"${long('key ')}":1,"${long('dup')}":2,"${long('dup')}":3,"file\\u005fid":"file_abc"}`),
      // \u00e9 beside é in short strings (not read as Latin-1), and long strings of invalid UTF-8.
      large(`{"\\u00e9":1,"é":2,"bad":"${long('\\u00e9')}"}`),
    ].map((t) => Buffer.from(t));
    bodies.push(
      Buffer.concat([Buffer.from(large('"')), Buffer.alloc(LONG_STRING + 5, 0xff), Buffer.from('"}')]),
    );
    for (const body of bodies) {
      const json = await parsed(body);
      expect(readBack(json, json.value)).toEqual(JSON.parse(body.toString('utf8')));
    }
  });

  it('finds a file_id written with escapes whatever the strings around it hold', async () => {
    const body = Buffer.from(
      large(`[{"type":"document","source":{"type":"file","file\\u005fid":"file_1"}},"${tricky.join('')}"]`),
    );
    const json = await parsed(body);
    expect(fileRefs(json.value, (s) => json.text(s))).toEqual(['file_1']);
  });

  const jsonParseError = (body: Buffer) => {
    try {
      JSON.parse(body.toString('utf8'));
    } catch (err) {
      return (err as Error).message;
    }
    return '';
  };
  // Inside a long string: the scan found its quotes, so it cannot move a value.
  const inString: [string, string][] = [
    ['a raw newline', `"${long('a')}\n"`],
    ['a raw control character', `"${long('a')}\u0001"`],
    ['a raw NUL', `"${long('a')}\u0000"`],
    ['an unknown escape', `"${long('a')}\\x"`],
    ['a short \\u escape', `"${long('a')}\\u12"`],
    ['a \\u escape with a non-hex digit', `"${long('a')}\\u12G4"`],
  ];
  it.each(inString)(
    'refuses %s in a long string once it is read, with JSON.parse’s own message; unread, it is the provider’s to judge',
    async (_, inner) => {
      const expected = jsonParseError(Buffer.from(large(inner)));
      expect(expected).not.toBe('');
      const json = await parsed(Buffer.from(large(inner)));
      expect(() => json.text((json.value as { k: string }).k)).toThrow(expected);
      const call = Buffer.from(
        `{"model":"m","max_tokens":1,"messages":[],"pad":"${pad(LARGE_BODY)}","k":${inner}}`,
      );
      await expect(readMessagesBody(call, { maxPdfPages: 100 })).resolves.toMatchObject({
        size: { model: 'm' },
      });
    },
  );
  // Around one: the structure itself is broken.
  const structural: [string, string][] = [
    ['a string cut short', `"${long('a')}`],
    ['a backslash before the end', `"${long('a')}\\"`],
    ['a missing comma after a long string', `["${long('a')}" "b"]`],
    ['a long string as a key without a value', `{"${long('a')}"}`],
  ];
  it.each(structural)('refuses %s with JSON.parse’s own message', async (_, inner) => {
    const body = Buffer.from(large(inner));
    const expected = jsonParseError(body);
    expect(expected).not.toBe('');
    await expect(readMessagesBody(body, { maxPdfPages: 100 })).rejects.toThrow(
      `Request body is not valid JSON: ${expected}`,
    );
  });

  it('accepts every valid escape in a long string', async () => {
    const escapes = '\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041 \\uD83D\\uDE00 \\u00ff ';
    const body = Buffer.from(
      `{"model":"m","max_tokens":1,"messages":[],"pad":"${pad(LARGE_BODY)}","s":"${long(escapes)}"}`,
    );
    const { json, size } = await readMessagesBody(body, { maxPdfPages: 100 });
    expect(size.model).toBe('m');
    expect(json.text((json.value as { s: string }).s)).toBe(JSON.parse(body.toString()).s);
  });

  it('cuts the skeleton at the long strings only, so the parsed body stays small', async () => {
    const body = Buffer.from(large(`[${Array.from({ length: 50 }, () => `"${long('é')}"`).join(',')}]`));
    const json = await parsed(body);
    const items = (json.value as { k: string[]; pad: string }).k;
    expect(items.every((s) => s.length < 64)).toBe(true);
    expect(json.text(items[49]!)).toBe(long('é'));
    expect((json.value as { pad: string }).pad.length).toBeLessThan(64);
  });

  describe('leaving out what nothing reads (messages, system, tools)', () => {
    /** A messages body over LARGE_BODY: `messages`' content raw JSON, long strings in system and the history. */
    const call = (messages: string, extra = '') =>
      Buffer.from(
        `{"model":"m","max_tokens":5,"metadata":{"user_id":"u"},` +
          `"system":[{"type":"text","text":"${long('sys ')}","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
          `"tools":[{"name":"Read","input_schema":{"type":"object","properties":{"p":{"type":"string"}}}}],` +
          `"messages":${messages}${extra},"pad":"${pad(LARGE_BODY)}"}`,
      );
    const history = (block: string) =>
      `[{"role":"user","content":[{"type":"text","text":"${long('ask ')}"}]},{"role":"user","content":[${block}]}]`;

    it('parses them as empty and everything else as JSON.parse does; the cache write is still read', async () => {
      const body = call(
        history('{"type":"tool_result","tool_use_id":"t","content":"done"}'),
        ',"container":{"skills":[{"skill_id":"s1"}]}',
      );
      const { json, size } = await readMessagesBody(body, { maxPdfPages: 100 });
      const { messages, system, tools, ...rest } = readBack(json, json.value) as Record<string, unknown>;
      expect({ messages, system, tools }).toEqual({ messages: [], system: [], tools: [] });
      const whole = JSON.parse(body.toString());
      delete whole.messages;
      delete whole.system;
      delete whole.tools;
      expect(rest).toEqual(whole);
      expect(size).toMatchObject({ model: 'm', maxTokens: 5, cacheWrite: '1h', pdfPages: 0 });
    });

    it.each([
      ['a file_id', '{"type":"image","source":{"type":"file","file_id":"file_9"}}', ['file_9']],
      [
        'a file_id written with escapes',
        '{"type":"image","source":{"type":"file","file\\u005fid":"file_9"}}',
        ['file_9'],
      ],
      [
        'a document',
        '{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hi"}}',
        [],
      ],
    ])('parses them whole when they name %s', async (_, block, files) => {
      const { json } = await readMessagesBody(call(history(block)), { maxPdfPages: 100 });
      expect((json.value as { messages: unknown[] }).messages).toHaveLength(2);
      expect(fileRefs(json.value, (v) => json.text(v))).toEqual(files);
    });

    it('parses a member whose name is written with escapes', async () => {
      const body = call(history('{"type":"text","text":"x"}'))
        .toString()
        .replace('"messages":', '"m\\u0065ssages":');
      const { json } = await readMessagesBody(Buffer.from(body), { maxPdfPages: 100 });
      expect((json.value as { messages: unknown[] }).messages).toHaveLength(2);
    });

    it('never leaves out a member the endpoint’s rules read a field of', () => {
      expect(skippableMembers({ models: ['model'], refs: [] })).toEqual(['messages', 'system', 'tools']);
      expect(
        skippableMembers({
          models: ['tools[].model'],
          refs: [{ at: 'messages[].content[].skill_id', kind: 'skill' }],
        }),
      ).toEqual(['system']);
    });

    it('leaves malformed JSON inside a left-out member to the provider, and refuses it anywhere else', async () => {
      const broken = history('{"type":"text","text":"x",}');
      await expect(readMessagesBody(call(broken), { maxPdfPages: 100 })).resolves.toMatchObject({
        size: { model: 'm' },
      });
      await expect(
        readMessagesBody(call(history('{"type":"text","text":"x"}'), ',"metadata2":{"a":1,}'), {
          maxPdfPages: 100,
        }),
      ).rejects.toThrow('Request body is not valid JSON');
    });
  });
});
