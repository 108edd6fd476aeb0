import { makeEncryptedTestPdf, makeTestPdf } from '@keygate/pdf';
import { describe, expect, it } from 'vitest';
import { summarizePdf } from './summarize-pdf';
import { errorBody, fakeFetch, json, message, unitClient, type SentRequest } from './test-support';

const MODEL = 'claude-opus-4-5';
const lastText = (req: SentRequest): string => req.body!.messages[0].content.at(-1).text;
const documents = (req: SentRequest) =>
  req.body!.messages[0].content.filter((b: { type: string }) => b.type === 'document');

/** A model that answers each part with a summary naming its pages, and the reduce step with "FINAL". */
function summarizer(opts: { delayMs?: number; failOn?: string; flaky?: boolean } = {}) {
  let active = 0;
  const state = { peak: 0, attempts: 0 };
  const fake = fakeFetch(async (req) => {
    state.peak = Math.max(state.peak, ++active);
    await new Promise((r) => setTimeout(r, opts.delayMs ?? 0));
    active--;
    const text = lastText(req);
    const pages = /^Pages (\d+–\d+)/.exec(text)?.[1];
    if (opts.failOn && pages === opts.failOn)
      return json(errorBody('invalid_request_error', 'bad part'), 400);
    if (opts.flaky && pages && state.attempts++ === 0)
      return json(errorBody('overloaded_error'), 529, { 'retry-after-ms': '1' });
    return json(message(pages ? `Summary of pages ${pages}.` : documents(req).length ? 'WHOLE' : 'FINAL'));
  });
  return { ...fake, state };
}

describe('summarizePdf', () => {
  it('a document that fits goes whole, in one request with the instruction and format', async () => {
    const { fetch, sent } = summarizer();
    const bytes = await makeTestPdf({ pages: 10 });
    const out = await summarizePdf(unitClient(fetch), bytes, {
      model: MODEL,
      instruction: 'List the risks.',
      format: 'bullets',
      title: 'Q3',
    });
    expect(out).toMatchObject({
      strategy: 'single',
      result: 'WHOLE',
      pages: 10,
      chunks: [],
      usage: { calls: 1 },
    });
    expect(sent).toHaveLength(1);
    expect(documents(sent[0]!)).toEqual([
      expect.objectContaining({
        title: 'Q3',
        source: expect.objectContaining({ data: Buffer.from(bytes).toString('base64') }),
      }),
    ]);
    expect(lastText(sent[0]!)).toBe('List the risks.\n\nAnswer as a bulleted list of the key points.');
    expect(sent[0]!.headers.get('keygate-group-id')).toBe(out.groupId);
  });

  it('a longer one: parts within the page limit, bounded concurrency, and a reduce step that sees every summary', async () => {
    const { fetch, sent, state } = summarizer({ delayMs: 15 });
    const out = await summarizePdf(unitClient(fetch), await makeTestPdf({ pages: 45 }), {
      model: MODEL,
      maxPages: 10,
      concurrency: 2,
      format: 'markdown',
      groupId: 'pdf-job',
    });
    expect(out.strategy).toBe('map_reduce');
    expect(out.chunks.map((c) => [c.fromPage, c.toPage, c.summary])).toEqual([
      [1, 10, 'Summary of pages 1–10.'],
      [11, 20, 'Summary of pages 11–20.'],
      [21, 30, 'Summary of pages 21–30.'],
      [31, 40, 'Summary of pages 31–40.'],
      [41, 45, 'Summary of pages 41–45.'],
    ]);
    expect(state.peak).toBe(2);
    expect(sent).toHaveLength(6);
    const reduce = sent.at(-1)!;
    expect(documents(reduce)).toEqual([]);
    for (const chunk of out.chunks)
      expect(lastText(reduce)).toContain(
        `<part pages="${chunk.fromPage}-${chunk.toPage}">\n${chunk.summary}\n</part>`,
      );
    expect(lastText(reduce)).toMatch(
      /5 consecutive parts of a 45-page document[\s\S]*Summarize the document\.\n\nFormat the answer as Markdown/,
    );
    expect(sent.every((r) => r.headers.get('keygate-group-id') === 'pdf-job')).toBe(true);
    expect(out).toMatchObject({ result: 'FINAL', groupId: 'pdf-job', usage: { calls: 6 } });
  });

  it('parts keep the SDK retries: an overloaded part is retried and counted', async () => {
    const { fetch } = summarizer({ flaky: true });
    const out = await summarizePdf(unitClient(fetch), await makeTestPdf({ pages: 15 }), {
      model: MODEL,
      maxPages: 10,
    });
    expect(out.result).toBe('FINAL');
    expect(out.usage).toMatchObject({ calls: 3, retries: { overloaded: 1 } });
  });

  it('a part that fails stops the job before the reduce step', async () => {
    const { fetch, sent } = summarizer({ failOn: '11–20' });
    await expect(
      summarizePdf(unitClient(fetch), await makeTestPdf({ pages: 30 }), {
        model: MODEL,
        maxPages: 10,
        concurrency: 1,
      }),
    ).rejects.toThrow(/bad part/);
    expect(sent.map(lastText).some((t) => t.startsWith('Below are summaries'))).toBe(false);
  });

  it('refuses files that are not PDFs or are encrypted, before any request', async () => {
    const { fetch, sent } = summarizer();
    const client = unitClient(fetch);
    await expect(
      summarizePdf(client, new TextEncoder().encode('plain text'), { model: MODEL }),
    ).rejects.toMatchObject({ code: 'invalid_pdf' });
    await expect(summarizePdf(client, makeEncryptedTestPdf(), { model: MODEL })).rejects.toMatchObject({
      code: 'encrypted',
    });
    expect(sent).toHaveLength(0);
  });
});
