import Anthropic from '@anthropic-ai/sdk';
import Anthropic20230601 from '@anthropic-ai/sdk-2023-06-01';
import { describe, expect, it } from 'vitest';
import { PROVIDER_KEY } from './harness';
import { captured, expectSameProviderRequests, useClientStacks } from './real-clients';

/**
 * Two API versions at once: the official TypeScript SDK's 1.x sends `anthropic-version:
 * 2026-10-21`, its 0.x sends 2023-06-01. The gateway passes each through untouched, and the
 * emulator answers each as the provider does (platform.claude.com/docs/en/api/migration-2026-10-21,
 * read 2026-11-29): under 2026-10-21, sampling parameters, a document in an assistant message and
 * citations on a user's text block are 400s.
 */
const ctx = useClientStacks();

type Client = Pick<Anthropic, 'messages'>;
const SDKS = [
  {
    version: '2026-10-21',
    make: (baseURL: string, key: string): Client => new Anthropic({ baseURL, authToken: key, apiKey: null }),
  },
  {
    version: '2023-06-01',
    make: (baseURL: string, key: string): Client =>
      new Anthropic20230601({ baseURL, authToken: key, apiKey: null }) as unknown as Client,
  },
] as const;

const MODEL = 'claude-sonnet-4-6';
const hello = { model: MODEL, max_tokens: 32, messages: [{ role: 'user' as const, content: 'Hello' }] };
// A field the new SDK no longer types: sent as a raw body field, as hand-built requests do.
const withTemperature = { ...hello, temperature: 1 } as typeof hello;
const assistantDocument = {
  ...hello,
  messages: [
    { role: 'user', content: 'Read this.' },
    {
      role: 'assistant',
      content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'A note.' } }],
    },
    { role: 'user', content: 'Summarise it.' },
  ],
} as unknown as typeof hello;
const userCitations = {
  ...hello,
  messages: [
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: 'As cited.',
          citations: [
            {
              type: 'char_location',
              cited_text: 'x',
              document_index: 0,
              start_char_index: 0,
              end_char_index: 1,
            },
          ],
        },
      ],
    },
  ],
} as unknown as typeof hello;

async function outcome(run: () => Promise<unknown>): Promise<{ status: number; message?: string }> {
  try {
    await run();
    return { status: 200 };
  } catch (err) {
    const e = err as { status?: number; error?: { error?: { message?: string } } };
    if (typeof e.status !== 'number') throw err;
    return { status: e.status, message: e.error?.error?.message };
  }
}

describe('both API versions through the gateway, each as the provider answers it', () => {
  it.each(SDKS)(
    'SDK sending $version: the same requests reach the provider, with the same answers',
    async (sdk) => {
      const { stack, direct } = ctx;
      const bodies = [hello, withTemperature, assistantDocument, userCitations];
      const run = (client: Client) => async () => {
        const out = [];
        for (const body of bodies) out.push(await outcome(() => client.messages.create(body)));
        out.push(await outcome(() => client.messages.countTokens(withTemperature)));
        return out;
      };
      const straight = await captured(direct, run(sdk.make(direct.url, PROVIDER_KEY)));
      const through = await captured(stack.emulator, run(sdk.make(stack.gateway.url, stack.appKey)));

      expect(through.result).toEqual(straight.result);
      expectSameProviderRequests(straight.requests, through.requests);
      for (const r of through.requests) expect(r.headers['anthropic-version']).toBe(sdk.version);
      const statuses = through.result.map((r) => r.status);
      if (sdk.version === '2023-06-01') expect(statuses).toEqual([200, 200, 200, 200, 200]);
      else {
        expect(statuses).toEqual([200, 400, 400, 400, 400]);
        expect(through.result[1]!.message).toBe('temperature: Extra inputs are not permitted');
        expect(through.result[2]!.message).toMatch(
          /^messages\.1\.content\.0: document blocks are not accepted/,
        );
        expect(through.result[3]!.message).toMatch(/^messages\.0\.content\.0\.citations: /);
      }
    },
  );

  it('the refusals of the new version are recorded as the calls they were, with the status the provider gave', async () => {
    const { stack } = ctx;
    const client = SDKS[0].make(stack.gateway.url, stack.appKey);
    const before = (await stack.calls()).length;
    expect((await outcome(() => client.messages.create(withTemperature))).status).toBe(400);
    await stack.gateway.writer.flush();
    const rows = (await stack.calls()).slice(before);
    expect(rows.map((r) => [r.status, r.error_type, r.model])).toEqual([
      [400, 'invalid_request_error', MODEL],
    ]);
  });

  it('a batch created under 2026-10-21 is refused for a request with sampling parameters; under 2023-06-01 it is taken', async () => {
    const { stack } = ctx;
    const create = (version: string) =>
      fetch(`${stack.gateway.url}/v1/messages/batches`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${stack.appKey}`,
          'content-type': 'application/json',
          'anthropic-version': version,
        },
        body: JSON.stringify({ requests: [{ custom_id: 'a', params: withTemperature }] }),
      });
    const refused = await create('2026-10-21');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'requests.0.params.temperature: Extra inputs are not permitted',
    );
    const taken = await create('2023-06-01');
    expect(taken.status).toBe(200);
    expect(((await taken.json()) as { type: string }).type).toBe('message_batch');
  });
});
