import Anthropic from '@anthropic-ai/sdk';
import { makeEncryptedTestPdf, makeTestPdf } from '@keygate/pdf';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectedColumns, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

const MODEL = 'claude-opus-4-5';
const message = (content: unknown = 'hi') => ({
  model: MODEL,
  max_tokens: 64,
  messages: [{ role: 'user', content }],
});

function post(stack: Stack, body: string | Buffer, headers: Record<string, string> = {}) {
  return fetch(`${stack.gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json', ...headers },
    body,
  });
}

async function expectError(res: Response, status: number, type: string, message?: RegExp) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { request_id: string; error: { message: string } };
  expect(body).toMatchObject({ type: 'error', error: { type } });
  expect(body.request_id).toBe(res.headers.get('request-id'));
  if (message) expect(body.error.message).toMatch(message);
  return body;
}

describe('bad input gets a clear error in the provider shape, and is recorded', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ KEYGATE_MAX_BODY_BYTES: String(2 * 1024 * 1024), KEYGATE_MAX_PDF_PAGES: '5' });
  });
  afterAll(() => stack?.close());

  it('invalid JSON', async () => {
    await expectError(await post(stack, '{"model": '), 400, 'invalid_request_error', /not valid JSON/);
  });

  it.each([
    ['model', { max_tokens: 5, messages: [] }, /model: Field required/],
    ['max_tokens', { model: MODEL, messages: [] }, /max_tokens: Field required/],
    ['messages', { model: MODEL, max_tokens: 5 }, /messages: Field required/],
    ['max_tokens of the wrong type', { model: MODEL, max_tokens: '5', messages: [] }, /max_tokens: /],
    ['a body that is not an object', [message()], /must be a JSON object/],
  ])('missing or wrong %s', async (_n, body, msg) => {
    await expectError(await post(stack, JSON.stringify(body)), 400, 'invalid_request_error', msg);
  });

  it('a body over the size limit answers 413 request_too_large', async () => {
    const huge = JSON.stringify(message('x'.repeat(3 * 1024 * 1024)));
    await expectError(await post(stack, huge), 413, 'request_too_large', /maximum size of 2 MB/);
  });

  it('PDF checks: bad base64, not a PDF, encrypted, over the page limit', async () => {
    const doc = (data: string) => [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
      { type: 'text', text: 'sum' },
    ];
    const six = Buffer.from(await makeTestPdf({ pages: 6 })).toString('base64');
    const three = Buffer.from(await makeTestPdf({ pages: 3 })).toString('base64');
    await expectError(
      await post(stack, JSON.stringify(message(doc('not base64!!')))),
      400,
      'invalid_request_error',
      /not valid base64/,
    );
    await expectError(
      await post(stack, JSON.stringify(message(doc(Buffer.from('hello world, no pdf').toString('base64'))))),
      400,
      'invalid_request_error',
      /not a PDF/,
    );
    await expectError(
      await post(stack, JSON.stringify(message(doc(Buffer.from(makeEncryptedTestPdf()).toString('base64'))))),
      400,
      'invalid_request_error',
      /encrypted/,
    );
    await expectError(
      await post(stack, JSON.stringify(message(doc(six)))),
      400,
      'invalid_request_error',
      /6 pages; the limit is 5 pages.*summarizePdf\(\)/,
    );
    const both = [...doc(three), ...doc(three)];
    await expectError(
      await post(stack, JSON.stringify(message(both))),
      400,
      'invalid_request_error',
      /6 pages in all/,
    );
    expect((await post(stack, JSON.stringify(message(doc(three))))).status).toBe(200);
  });

  it('a bad group id is refused', async () => {
    await expectError(
      await post(stack, JSON.stringify(message()), { 'keygate-group-id': 'x'.repeat(200) }),
      400,
      'invalid_request_error',
      /keygate-group-id/,
    );
  });

  it('refused calls are in the call log with their status and error type', async () => {
    const rows = await stack.calls();
    const refused = rows.filter((r) => r.status >= 400);
    expect(refused.map((r) => r.status)).toEqual(expect.arrayContaining([400, 413]));
    expect(
      refused.every((r) => r.error_type && r.key_id === stack.keyId && r.upstream_request_id === null),
    ).toBe(true);
  });
});

describe('upstream failures', () => {
  it('upstream unreachable: 502 api_error, safe to retry, recorded', async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const port = (dead.address() as { port: number }).port;
    await new Promise((r) => dead.close(r));
    const stack = await startStack({ KEYGATE_UPSTREAM_URL: `http://127.0.0.1:${port}` });
    try {
      const res = await post(stack, JSON.stringify(message()));
      await expectError(res, 502, 'api_error', /Could not reach the provider \(ECONNREFUSED\)/);
      expect(res.headers.get('x-should-retry')).toBe('true');
      const [row] = await stack.calls();
      expect(row).toMatchObject({ status: 502, error_type: 'api_error' });
    } finally {
      await stack.close();
    }
  });

  it('upstream slower than the timeout: 504 timeout_error, and the upstream request is abandoned', async () => {
    const stack = await startStack({ KEYGATE_UPSTREAM_TIMEOUT_MS: '300' });
    try {
      const res = await post(stack, JSON.stringify(message()), {
        'x-emulator-scenario': 'slow_first_byte',
        'x-emulator-delay-ms': '3000',
      });
      await expectError(res, 504, 'timeout_error', /did not answer within/);
      const entry = await stack.emulator.ledger.waitFor(
        (e) => e.scenario === 'slow_first_byte' && e.endedAt !== null,
        3000,
      );
      expect(entry.complete).toBe(false);
      const [row] = await stack.calls();
      expect(row).toMatchObject({ status: 504, error_type: 'timeout_error' });
    } finally {
      await stack.close();
    }
  });

  it('database down: calls still succeed, and their records are written once it is back', async () => {
    const stack = await startStack();
    const sql = stack.gateway.store.db.sql;
    try {
      await sql`alter table calls rename to calls_offline`;
      const client = new Anthropic({
        baseURL: stack.gateway.url,
        authToken: stack.appKey,
        apiKey: null,
        maxRetries: 0,
      });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push((await client.messages.create(message(`during outage ${i}`) as never)).id);
      // A write has failed before the table comes back (on a loaded machine the first flush may
      // come late): the outage is really met. The compiled gateway's log lines reach the test
      // through its stderr, a little after the fact.
      await waitFor(() => stack.logs.some((l) => l.includes('call log write failed')), {
        timeout: 10_000,
        what: "the call log's outage line",
      });
      // The gateway's readiness report counts what waits for PostgreSQL (in its process or not).
      await expect
        .poll(
          async () =>
            (await api(stack.gateway.url, '/readyz', { bearer: stack.gateway.operatorToken })).body.checks
              .call_log.queued,
          {
            timeout: 5_000,
          },
        )
        .toBe(3);
      await sql`alter table calls_offline rename to calls`;
      const rows = await waitFor(
        async () => {
          const all = await stack.calls();
          return all.length >= 3 && all;
        },
        { timeout: 5_000, interval: 50, what: 'the three calls in the call log' },
      );
      expect(rows.map((r) => r.upstream_message_id).sort()).toEqual([...ids].sort());
    } finally {
      await stack.close();
    }
  });
});

describe('test keys', () => {
  it('kg_test_ keys are served by the built-in emulator and never reach the provider', async () => {
    const stack = await startStack();
    try {
      const testKey = await stack.newKey({ kind: 'test' });
      const client = new Anthropic({
        baseURL: stack.gateway.url,
        authToken: testKey.secret,
        apiKey: null,
        maxRetries: 0,
      });
      const msg = (await client.messages.create(message('offline') as never)) as Anthropic.Message;
      // Answered (by the emulator inside the gateway), and the provider saw nothing.
      expect(msg.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/Emulated reply/) });
      expect(stack.emulator.ledger.entries).toHaveLength(0);
      const [row] = await stack.calls();
      expect(row).toMatchObject({
        key_id: testKey.id,
        upstream_message_id: msg.id,
        status: 200,
        ...expectedColumns(msg.usage),
      });
    } finally {
      await stack.close();
    }
  });
});
