import { makeTestPdf } from '@keygate/pdf';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../lib/errors';
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../pipeline/json-bounds';
import { LARGE_BODY } from '../pipeline/json-body';
import { validateMessagesBody } from './validate';

const body = (v: unknown) => Buffer.from(JSON.stringify(v));
const opts = { maxPdfPages: 5 };
const refusal = (raw: Buffer, endpoint: 'messages' | 'count_tokens' = 'messages') =>
  validateMessagesBody(raw, opts, endpoint).catch((e: unknown) => e);
const pdf = async (pages: number) => Buffer.from(await makeTestPdf({ pages })).toString('base64');
const doc = (data: string) => ({
  type: 'document',
  source: { type: 'base64', media_type: 'application/pdf', data },
});

describe('validateMessagesBody', () => {
  it('reads the model and whether the answer is streamed', async () => {
    await expect(
      validateMessagesBody(body({ model: 'claude-x', max_tokens: 5, messages: [], stream: true }), opts),
    ).resolves.toMatchObject({ model: 'claude-x', stream: true });
  });

  it('reads which cache write the body asks for: none, 5 minutes, or 1 hour', async () => {
    const text = (cache?: object) => ({
      type: 'text',
      text: 'hi',
      ...(cache ? { cache_control: cache } : {}),
    });
    const of = async (cache?: object) =>
      (
        await validateMessagesBody(
          body({ model: 'claude-x', max_tokens: 5, system: [text(cache)], messages: [] }),
          opts,
        )
      ).cacheWrite;
    expect(await of()).toBeNull();
    expect(await of({ type: 'ephemeral' })).toBe('5m');
    expect(await of({ type: 'ephemeral', ttl: '5m' })).toBe('5m');
    expect(await of({ type: 'ephemeral', ttl: '1h' })).toBe('1h');
    // A large body is searched without its long strings: the cache_control after them still counts.
    const long = { type: 'text', text: 'x'.repeat(200_000) };
    const large = async (cache?: object) =>
      (
        await validateMessagesBody(
          body({
            model: 'claude-x',
            max_tokens: 5,
            messages: [{ role: 'user', content: [long, text(cache)] }],
          }),
          opts,
        )
      ).cacheWrite;
    expect(await large()).toBeNull();
    expect(await large({ type: 'ephemeral' })).toBe('5m');
    expect(await large({ type: 'ephemeral', ttl: '1h' })).toBe('1h');
  });

  it('lets through roles, block types, fields and values it has never seen', async () => {
    const unseen = {
      model: 'claude-x',
      max_tokens: 5,
      stream: 'maybe',
      messages: [
        { role: 'system', content: 'per-turn instructions' },
        {
          role: 'robot',
          content: [{ type: 'hologram', beams: 3 }, { type: 'text' }, 'not even an object', null],
        },
        { content: 42 },
        7,
      ],
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      output_config: { effort: 'high' },
      thinking: { type: 'adaptive' },
      tools: [{ type: 'tool_search_tool_regex_20251119', name: 'x' }],
      something_new: [1, { deeply: ['nested'] }],
    };
    await expect(validateMessagesBody(body(unseen), opts)).resolves.toMatchObject({
      model: 'claude-x',
      stream: false,
    });
    const { max_tokens: _, ...counted } = unseen;
    await expect(validateMessagesBody(body(counted), opts, 'count_tokens')).resolves.toMatchObject({
      model: 'claude-x',
      stream: false,
    });
  });

  it.each([
    ['a JSON array', [], /^Request body must be a JSON object/],
    ['a JSON string', 'hi', /^Request body must be a JSON object/],
    ['JSON null', null, /^Request body must be a JSON object/],
    ['no model', { max_tokens: 5, messages: [] }, /^model: Field required/],
    ['a numeric model', { model: 4, max_tokens: 5, messages: [] }, /^model: /],
    ['no max_tokens', { model: 'm', messages: [] }, /^max_tokens: Field required/],
    ['max_tokens as a string', { model: 'm', max_tokens: '5', messages: [] }, /^max_tokens: /],
    ['a fractional max_tokens', { model: 'm', max_tokens: 1.5, messages: [] }, /^max_tokens: /],
    ['a zero max_tokens', { model: 'm', max_tokens: 0, messages: [] }, /^max_tokens: /],
    ['no messages', { model: 'm', max_tokens: 5 }, /^messages: Field required/],
    ['messages as an object', { model: 'm', max_tokens: 5, messages: { role: 'user' } }, /^messages: /],
  ])('refuses %s', async (_, value, message) => {
    const err = await refusal(body(value));
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(message) });
  });

  it('does not ask count_tokens for max_tokens, but still for model and messages', async () => {
    await expect(
      validateMessagesBody(body({ model: 'm', messages: [] }), opts, 'count_tokens'),
    ).resolves.toEqual({
      model: 'm',
      stream: false,
      maxTokens: 0,
      inputBytes: expect.any(Number),
      pdfPages: 0,
      cacheWrite: null,
    });
    expect(await refusal(body({ model: 'm' }), 'count_tokens')).toMatchObject({
      message: expect.stringMatching(/^messages: Field required/),
    });
  });

  it('refuses a model id the call log could not store: a NUL, or past 256 characters', async () => {
    expect(await refusal(body({ model: 'claude\u0000x', max_tokens: 5, messages: [] }))).toMatchObject({
      type: 'invalid_request_error',
      message: 'model: must not contain NUL characters.',
    });
    expect(await refusal(body({ model: 'm'.repeat(257), max_tokens: 5, messages: [] }))).toMatchObject({
      message: 'model: must be at most 256 characters.',
    });
    await expect(
      validateMessagesBody(
        body({ model: `tab\there ${'é'.repeat(200)}`, max_tokens: 5, messages: [] }),
        opts,
      ),
    ).resolves.toMatchObject({ stream: false });
  });

  it('reads a huge model id in a large body by its value, not by the placeholder that stands for it', async () => {
    const raw = body({ model: 'm'.repeat(LARGE_BODY), max_tokens: 5, messages: [] });
    expect(await refusal(raw)).toMatchObject({ message: 'model: must be at most 256 characters.' });
  });

  it('inspects a base64 PDF wherever it sits: any role, nested in a tool result, inside an unknown block', async () => {
    const six = await pdf(6);
    const places: [unknown[], string][] = [
      [[{ role: 'system', content: [doc(six)] }], 'messages[0].content[0]'],
      [
        [
          { role: 'user', content: 'x' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [doc(six)] }] },
        ],
        'messages[1].content[0].content[0]',
      ],
      [
        [{ role: 'user', content: [{ type: 'future_container', items: { first: doc(six) } }] }],
        'messages[0].content[0].items.first',
      ],
    ];
    for (const [messages, where] of places) {
      const err = await refusal(body({ model: 'm', max_tokens: 5, messages }));
      expect(err).toMatchObject({
        type: 'invalid_request_error',
        message: `${where}: the PDF has 6 pages; the limit is 5 pages per request. Split it with summarizePdf() or pdf.split() from @keygate/sdk.`,
      });
    }
  });

  it('adds up the pages of PDFs in different places', async () => {
    const three = await pdf(3);
    const messages = [
      { role: 'user', content: [doc(three)] },
      { role: 'user', content: [{ type: 'tool_result', content: [doc(three)] }] },
    ];
    expect(await refusal(body({ model: 'm', max_tokens: 5, messages }))).toMatchObject({
      message: expect.stringMatching(/^The request's PDFs have 6 pages in all/),
    });
    await expect(
      validateMessagesBody(body({ model: 'm', max_tokens: 5, messages: messages.slice(0, 1) }), opts),
    ).resolves.toMatchObject({ model: 'm' });
  });

  it('reads a non-ASCII body as its UTF-8: the model exactly, a PDF under a non-ASCII key, keys that differ only in UTF-8', async () => {
    const six = await pdf(6);
    const model = `claude-é-✓-\u{1f600}`;
    await expect(
      validateMessagesBody(
        body({ model, max_tokens: 5, messages: [{ role: 'user', content: 'déjà vu' }] }),
        opts,
      ),
    ).resolves.toMatchObject({ model });
    const under = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: { 'clé ✓': doc(six) } }] };
    expect(await refusal(body(under))).toMatchObject({
      message: expect.stringMatching(/^messages\[0\]\.content\.clé ✓: the PDF has 6 pages/),
    });
    // "é" as UTF-8 bytes and "\u00c3\u00a9" are two keys; read as Latin-1 they would be one, and
    // the later value would hide the PDF under the first.
    const twoKeys = Buffer.from(
      `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":{"é":${JSON.stringify(doc(six))},"\\u00c3\\u00a9":1}}]}`,
    );
    expect(await refusal(twoKeys)).toMatchObject({ message: expect.stringMatching(/the PDF has 6 pages/) });
  });

  it('refuses a PDF document whose data is not base64, wherever it sits', async () => {
    const messages = [{ role: 'narrator', content: [{ type: 'x', inner: [doc('not base64!!')] }] }];
    expect(await refusal(body({ model: 'm', max_tokens: 5, messages }))).toMatchObject({
      message: 'messages[0].content[0].inner[0].source.data: not valid base64.',
    });
  });

  it('walks messages nested as deep as the gateway reads, and refuses deeper nesting before parsing', async () => {
    const nested = (depth: number) =>
      Buffer.from(`{"model":"m","max_tokens":5,"messages":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    // The body itself is the first level.
    await expect(validateMessagesBody(nested(MAX_JSON_DEPTH - 1), opts)).resolves.toMatchObject({
      model: 'm',
      maxTokens: 5,
    });
    expect(await refusal(nested(MAX_JSON_DEPTH))).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      message: expect.stringMatching(/deeper than 256 levels/),
    });
    // Unclosed, and 200,000 deep: refused by the scan, never parsed.
    expect(await refusal(Buffer.from(`{"model":"m","messages":${'['.repeat(200_000)}`))).toMatchObject({
      status: 400,
    });
  });

  it('refuses a body with more JSON values than the gateway walks with 413', async () => {
    const many = Buffer.from(`{"model":"m","max_tokens":5,"messages":[${'1,'.repeat(MAX_JSON_VALUES)}1]}`);
    expect(await refusal(many)).toMatchObject({ status: 413, type: 'request_too_large' });
  });

  it('reports what admission reserves from: max_tokens, the body size and the PDF pages', async () => {
    const raw = body({ model: 'm', max_tokens: 123, messages: [{ role: 'user', content: 'hi' }] });
    expect(await validateMessagesBody(raw, opts)).toEqual({
      model: 'm',
      stream: false,
      maxTokens: 123,
      inputBytes: raw.length,
      pdfPages: 0,
      cacheWrite: null,
    });
  });

  it('leaves a long string nothing reads to the provider, and refuses one it reads that is not valid JSON', async () => {
    // A raw newline inside a string: invalid JSON, but it cannot change where the body's values are.
    const text = `${'x'.repeat(LARGE_BODY)}\n`;
    const unread = Buffer.from(
      `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"${text}"}]}`,
    );
    await expect(validateMessagesBody(unread, opts)).resolves.toMatchObject({ model: 'claude-x' });
    const read = Buffer.from(`{"model":"${text}","max_tokens":5,"messages":[]}`);
    expect(await refusal(read)).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringMatching(/^Request body is not valid JSON/),
    });
  });

  it('answers invalid JSON first, whatever else is wrong, as a whole-body parse would', async () => {
    const err = await refusal(Buffer.from('{"model": 1,'));
    expect(err).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringMatching(/^Request body is not valid JSON/),
    });
  });
});
