import type Anthropic from '@anthropic-ai/sdk';
import { makeEncryptedTestPdf, makeTestPdf } from '@keygate/pdf';
import { describe, expect, it } from 'vitest';
import { EmulatorError } from './errors';
import { countTokens, measure } from './tokens';
import type { MessagesBody } from './types';

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const pdfBlock = (data: string) => ({
  type: 'document',
  source: { type: 'base64', media_type: 'application/pdf', data },
});
const body = (messages: MessagesBody['messages'], extra: Partial<MessagesBody> = {}): MessagesBody => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 100,
  messages,
  ...extra,
});

describe('token rule', () => {
  it('counts UTF-8 bytes / 4, rounded up, plus 10 per message', async () => {
    expect(countTokens(body([{ role: 'user', content: 'Hello' }]))).toBe(2 + 10);
    // 'é' is two bytes: 4 × 'é' = 8 bytes = 2 tokens.
    expect(countTokens(body([{ role: 'user', content: 'éééé' }]))).toBe(2 + 10);
    expect(countTokens(body([{ role: 'user', content: '' }]))).toBe(10);
  });

  it('sums all text before rounding: system, text blocks, tool_use input, tool_result, tools', async () => {
    const tool = { name: 'get_weather', input_schema: { type: 'object' } };
    const request = body(
      [
        { role: 'user', content: [{ type: 'text', text: 'abc' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { a: 1 } }],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }] },
          ],
        },
      ],
      { system: 'sys', tools: [tool] },
    );
    const bytes = 3 + 3 + JSON.stringify({ a: 1 }).length + 5 + JSON.stringify(tool).length;
    expect(countTokens(request)).toBe(Math.ceil(bytes / 4) + 30);
  });

  it('ignores cache_control when counting', async () => {
    const plain = body([{ role: 'user', content: [{ type: 'text', text: 'same text' }] }]);
    const marked = body([
      { role: 'user', content: [{ type: 'text', text: 'same text', cache_control: { type: 'ephemeral' } }] },
    ]);
    expect(countTokens(marked)).toBe(countTokens(plain));
  });

  it('charges 1,000 per image and 1,600 per PDF page', async () => {
    const image = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
    };
    expect(countTokens(body([{ role: 'user', content: [image, image] }]))).toBe(2_000 + 10);
    const pdf = b64(await makeTestPdf({ pages: 3 }));
    expect(countTokens(body([{ role: 'user', content: [pdfBlock(pdf)] }]))).toBe(3 * 1_600 + 10);
  });

  it('counts PDFs inside tool results and scanned (image-only) PDFs by page', async () => {
    const pdf = b64(await makeTestPdf({ pages: 2, imageOnly: true }));
    const content = [{ type: 'tool_result', tool_use_id: 't', content: [pdfBlock(pdf)] }];
    expect(countTokens(body([{ role: 'user', content }]))).toBe(2 * 1_600 + 10);
  });

  it.each([
    ['bad base64', 'not base64!'],
    ['not a PDF', Buffer.from('hello world, not a pdf').toString('base64')],
    ['encrypted', b64(makeEncryptedTestPdf())],
  ])('refuses a PDF that is %s with invalid_request_error', async (_name, data) => {
    let error: unknown;
    try {
      countTokens(body([{ role: 'user', content: [pdfBlock(data)] }]));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EmulatorError);
    expect((error as EmulatorError).type).toBe('invalid_request_error');
    expect((error as EmulatorError).message).toMatch(/messages\.0\.content\.0/);
  });

  it('refuses more than 100 PDF pages in one request', async () => {
    const pdf = b64(await makeTestPdf({ pages: 51 }));
    const request = body([{ role: 'user', content: [pdfBlock(pdf), pdfBlock(pdf)] }]);
    expect(() => countTokens(request)).toThrow(/maximum of 100 PDF pages/);
  });

  it('records breakpoints at token positions and refuses a fifth one', () => {
    const cc = { type: 'ephemeral' } as const;
    const m = measure(
      body(
        [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'x'.repeat(40), cache_control: cc },
              { type: 'text', text: 'y'.repeat(40) },
            ],
          },
        ],
        { system: [{ type: 'text', text: 's'.repeat(8), cache_control: { type: 'ephemeral', ttl: '1h' } }] },
      ),
    );
    expect(m.total).toBe(Math.ceil(88 / 4) + 10);
    expect(m.breakpoints.map((b) => [b.tokens, b.ttl])).toEqual([
      [2, '1h'],
      [Math.ceil(48 / 4) + 10, '5m'],
    ]);
    const five = Array.from({ length: 5 }, (_, i) => ({ type: 'text', text: `t${i}`, cache_control: cc }));
    expect(() => measure(body([{ role: 'user', content: five }]))).toThrow(/maximum of 4 blocks/);
  });
});

describe('countTokens as a library function', () => {
  it('takes the SDK request types and validates the shape', () => {
    const params: Anthropic.MessageCreateParams = {
      model: 'claude-haiku-4-5',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'Hello' }],
    };
    expect(countTokens(params)).toBe(12);
    expect(() => countTokens({ messages: [{ role: 'robot', content: 'x' }] })).toThrow(/messages\.0\.role/);
  });
});
