import { inspectPdf, makeTestPdf } from '@keygate/pdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type Stack } from './harness';

// Runs in-process and against the compiled gateway (the `compiled` project): the page count of
// a PDF the quick scan cannot read comes from pdf-lib, which the build must load correctly.
let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

/** A PDF whose startxref points nowhere and whose cross-reference lives in a stream: the byte scan gives up. */
async function damagedPdf(pages: number): Promise<string> {
  const pdf = Buffer.from(await makeTestPdf({ pages, useObjectStreams: true })).toString('latin1');
  const broken = new Uint8Array(Buffer.from(pdf.replace(/startxref\s+\d+/, 'startxref\n12'), 'latin1'));
  expect(inspectPdf(broken)).toMatchObject({ isPdf: true, pages: null });
  return Buffer.from(broken).toString('base64');
}

const call = (data: string) =>
  api(stack.gateway.url, '/v1/messages', {
    bearer: stack.appKey,
    body: {
      model: 'claude-opus-4-5',
      max_tokens: 16,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
            { type: 'text', text: 'Summarize.' },
          ],
        },
      ],
    },
  });

describe('a PDF with a broken cross-reference table', () => {
  it('of 120 pages is refused with the 400 before it goes upstream', async () => {
    const before = stack.emulator.ledger.entries.length;
    const res = await call(await damagedPdf(120));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: expect.stringMatching(/the PDF has 120 pages; the limit is 100 pages/),
      },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(stack.emulator.ledger.entries).toHaveLength(before);
    const row = (await stack.calls()).find((r) => r.id === res.body.request_id);
    expect(row).toMatchObject({ status: 400, error_type: 'invalid_request_error' });
  });

  it('of 80 pages is counted and forwarded: what the provider makes of it is its to say', async () => {
    const res = await call(await damagedPdf(80));
    const row = (await stack.calls()).find((r) => r.id === res.headers.get('keygate-request-id'));
    expect(row, JSON.stringify(res.body)).toMatchObject({
      upstream_request_id: expect.stringMatching(/^req_/),
    });
    expect(res.headers.get('request-id')).toBe(row!.upstream_request_id);
  });
});
