import { estimateOutputTokens } from '@keygate/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutStream, replyWords } from './cut-stream';
import { api, startStack, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

/** The estimate for the first `n` words of the reply, as the gateway's rule makes it. */
const estimateFor = (words: string[], n: number) =>
  Math.max(1, estimateOutputTokens(Buffer.byteLength(words.slice(0, n).join(''))));

describe('a stream that ends before the provider counted its output is recorded with an estimate', () => {
  it.each([1, 10, 100, 1_000])(
    'client leaves after %i deltas: estimated from what was forwarded, within tolerance of the ledger',
    async (after) => {
      const words = await replyWords(stack, after);
      // Deltas 10 ms apart (3 ms for the long one), so a loaded machine's abort lag costs few extra deltas.
      const { row, entry, clientDeltas } = await cutStream(stack, after, 'client', after >= 1_000 ? 3 : 10);
      expect(clientDeltas).toBeGreaterThanOrEqual(after);
      expect(entry.complete).toBe(false);
      // The emulator stopped at the abort and billed the words it had generated, one per delta.
      const generated = entry.usage!.output_tokens;
      expect(generated).toBeGreaterThanOrEqual(clientDeltas);
      expect(generated).toBeLessThan(words.length);
      expect(row).toMatchObject({
        status: 200,
        partial: true,
        estimated: true,
        error_type: 'client_closed',
        input_tokens: entry.usage!.input_tokens,
      });
      // Never below the provider's own count (message_start's 1), and exactly the rule applied to
      // a prefix of the reply: at least what the client read, at most what the emulator generated.
      expect(row.output_tokens).toBeGreaterThanOrEqual(1);
      expect(row.output_tokens).toBeGreaterThanOrEqual(estimateFor(words, clientDeltas));
      expect(row.output_tokens).toBeLessThanOrEqual(estimateFor(words, generated));
      expect(row.usage.output_tokens).toBe(row.output_tokens);
      // Tolerance against the ledger: the emulator bills one token per word (~6 bytes of its
      // text), the rule 3.5 bytes per token, so ~1.7x, less what was generated but not forwarded.
      const ratio = row.output_tokens / generated;
      // One word is too few to average: only its bounds are stated.
      expect(ratio).toBeGreaterThanOrEqual(after === 1 ? 0.5 : 1.3);
      expect(ratio).toBeLessThanOrEqual(after === 1 ? 3 : 2);
    },
  );

  it.each([1, 10, 100, 1_000])(
    'provider cuts after %i deltas: the estimate covers exactly the deltas it sent',
    async (after) => {
      const words = await replyWords(stack, after);
      const { row, entry, clientDeltas } = await cutStream(stack, after, 'upstream');
      expect(clientDeltas).toBe(after);
      expect(entry).toMatchObject({
        complete: false,
        eventsSent: after + 3,
        usage: { output_tokens: after },
      });
      expect(row).toMatchObject({
        partial: true,
        estimated: true,
        error_type: 'api_error',
        output_tokens: estimateFor(words, after),
      });
    },
  );

  it('an upstream that stalls mid-stream past the timeout: estimated too', async () => {
    const slow = await startStack({ KEYGATE_UPSTREAM_TIMEOUT_MS: '400' });
    try {
      const words = await replyWords(slow, 5);
      const { row, entry } = await cutStream(slow, 5, 'client', 2_000);
      expect(entry.usage!.output_tokens).toBe(1);
      expect(row).toMatchObject({
        partial: true,
        estimated: true,
        error_type: 'timeout_error',
        output_tokens: estimateFor(words, 1),
      });
    } finally {
      await slow.close();
    }
  });

  it('a complete stream is not estimated; the call log shows the flag', async () => {
    const whole = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'Hello there' }],
      }),
    });
    await whole.text();
    const { row: cut } = await cutStream(stack, 10, 'client');
    const admin = await stack.newKey({ kind: 'admin' });
    const { body } = await api(stack.gateway.url, '/v1/organizations/requests?limit=100', {
      key: admin.secret,
    });
    const byId = new Map<string, any>(body.data.map((r: any) => [r.id, r]));
    expect(byId.get(cut.id)).toMatchObject({
      partial: true,
      estimated: true,
      usage: expect.objectContaining({ output_tokens: cut.output_tokens }),
    });
    expect(byId.get(whole.headers.get('keygate-request-id')!)).toMatchObject({
      partial: false,
      estimated: false,
    });
  });
});
