import { describe, expect, it } from 'vitest';
import { MODEL, post, useEmulator } from './helpers';

/** What 2026-10-21 refuses and what it still takes (platform.claude.com/docs/en/api/migration-2026-10-21, read 2026-11-29). */
const ctx = useEmulator();
const NEW = { 'anthropic-version': '2026-10-21' };
const OLD = { 'anthropic-version': '2023-06-01' };
const citation = {
  type: 'char_location',
  cited_text: 'x',
  document_index: 0,
  start_char_index: 0,
  end_char_index: 1,
};
const doc = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'A note.' } };
const body = (messages: unknown[], extra: object = {}) => ({
  model: MODEL,
  max_tokens: 16,
  messages,
  ...extra,
});

async function answer(b: unknown, headers: Record<string, string>, path = '/v1/messages') {
  const res = await post(ctx.emulator, path, b, headers);
  const json = (await res.json()) as { error?: { message: string } };
  return { status: res.status, message: json.error?.message };
}

describe('anthropic-version 2026-10-21', () => {
  it.each(['temperature', 'top_p', 'top_k'])(
    '%s is a 400 even at its default, on messages and count_tokens; 2023-06-01 takes it',
    async (name) => {
      const b = body([{ role: 'user', content: 'hi' }], { [name]: name === 'top_k' ? 40 : 1 });
      for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
        expect(await answer(b, NEW, path)).toEqual({
          status: 400,
          message: `${name}: Extra inputs are not permitted`,
        });
        expect((await answer(b, OLD, path)).status).toBe(200);
        expect((await answer(b, {}, path)).status).toBe(200);
      }
    },
  );

  it('a document directly in an assistant message is refused; one nested in a tool result, or in a user message, is taken', async () => {
    const direct = body([
      { role: 'user', content: 'Read.' },
      { role: 'assistant', content: [doc] },
      { role: 'user', content: 'Go on.' },
    ]);
    expect(await answer(direct, NEW)).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^messages\.1\.content\.0: /),
    });
    expect((await answer(direct, OLD)).status).toBe(200);
    const nested = body([
      { role: 'user', content: 'Fetch it.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'server_tool_use',
            id: 'srvtoolu_1',
            name: 'web_fetch',
            input: { url: 'https://example.com' },
          },
          {
            type: 'web_fetch_tool_result',
            tool_use_id: 'srvtoolu_1',
            content: { type: 'web_fetch_result', url: 'https://example.com', content: doc },
          },
        ],
      },
      { role: 'user', content: [doc, { type: 'text', text: 'And this one.' }] },
    ]);
    expect((await answer(nested, NEW)).status).toBe(200);
  });

  it("citations on a user's text block (a search result's too) are refused; on an assistant's, and citations enabled on a document, are taken", async () => {
    const userText = body([
      { role: 'user', content: [{ type: 'text', text: 'Cited.', citations: [citation] }] },
    ]);
    expect(await answer(userText, NEW)).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^messages\.0\.content\.0\.citations: /),
    });
    expect((await answer(userText, OLD)).status).toBe(200);
    const inSearchResult = body([
      {
        role: 'user',
        content: [
          {
            type: 'search_result',
            source: 's',
            title: 't',
            content: [{ type: 'text', text: 'r', citations: [citation] }],
          },
        ],
      },
    ]);
    expect(await answer(inSearchResult, NEW)).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^messages\.0\.content\.0\.content\.0\.citations: /),
    });
    const taken = body([
      {
        role: 'user',
        content: [
          { ...doc, citations: { enabled: true } },
          { type: 'text', text: 'Quote it.', citations: [] },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'It says x.', citations: [citation] }] },
      { role: 'user', content: 'Thanks.' },
    ]);
    expect((await answer(taken, NEW)).status).toBe(200);
  });
});
