import { describe, expect, it } from 'vitest';
import { GatewayError } from '../lib/errors';
import { validateMessagesBody } from './validate';

const body = (v: unknown) => Buffer.from(JSON.stringify(v));
const opts = { maxPdfPages: 100 };

describe('validateMessagesBody', () => {
  it('reads the model and whether the answer is streamed', async () => {
    await expect(validateMessagesBody(body({ model: 'claude-x', max_tokens: 5, messages: [], stream: true }), opts)).resolves.toEqual({ model: 'claude-x', stream: true });
  });

  it('refuses a model name with a control character, which the call log could not store', async () => {
    const err = await validateMessagesBody(body({ model: 'claude\u0000x', max_tokens: 5, messages: [] }), opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/^model: must not contain control characters/) });
  });

  it('answers invalid JSON first, whatever else is wrong, as a whole-body parse would', async () => {
    const err = await validateMessagesBody(Buffer.from('{"model": 1,'), opts).catch((e: unknown) => e);
    expect(err).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/^Request body is not valid JSON/) });
  });
});
