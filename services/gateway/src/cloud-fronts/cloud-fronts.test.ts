import { EventStreamCodec } from '@smithy/core/event-streams';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../lib/errors';
import { bedrockError, chunkFrame } from './bedrock-answer';
import { fromBedrock, fromVertex } from './model-ids';
import { messagesBody } from './request';

describe('cloud model ids', () => {
  it.each([
    ['anthropic.claude-haiku-4-5-20251001-v1:0', 'claude-haiku-4-5-20251001'],
    ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5-20250929'],
    ['global.anthropic.claude-opus-4-1-20250805-v1:0', 'claude-opus-4-1-20250805'],
    ['anthropic.claude-3-5-sonnet-20241022-v2:0', 'claude-3-5-sonnet-20241022'],
    [
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'claude-sonnet-4-5-20250929',
    ],
    [
      'arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0',
      'claude-haiku-4-5-20251001',
    ],
  ])('Bedrock %s is the provider id %s', (id, model) => expect(fromBedrock(id)).toBe(model));

  it.each([
    ['claude-haiku-4-5@20251001', 'claude-haiku-4-5-20251001'],
    ['claude-3-5-sonnet-v2@20241022', 'claude-3-5-sonnet-20241022'],
    ['claude-sonnet-4-5', 'claude-sonnet-4-5'],
  ])('Vertex %s is the provider id %s', (id, model) => expect(fromVertex(id)).toBe(model));

  it.each([
    'amazon.titan-text-v1',
    'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6',
    'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0',
    'arn:aws:s3:::bucket/anthropic.claude-haiku-4-5-20251001-v1:0',
    'a\u0000b',
  ])('refuses %j with what to send', (id) => {
    expect(() => fromBedrock(id)).toThrow(GatewayError);
    expect(() => fromVertex(id)).toThrow(/not a Claude model id/);
  });
});

describe('a front body as a Messages body', () => {
  it('Bedrock: model and stream from the path, betas to the header, anthropic_version dropped', async () => {
    const headers: Record<string, string> = {};
    const raw = Buffer.from(
      JSON.stringify({
        anthropic_version: 'bedrock-2023-05-31',
        anthropic_beta: ['a-1', 'b-2'],
        max_tokens: 8,
      }),
    );
    const out = JSON.parse(
      (
        await messagesBody(raw, headers, { model: () => 'claude-x', stream: true, betasInBody: true })
      ).toString(),
    );
    expect(out).toEqual({ model: 'claude-x', max_tokens: 8, stream: true });
    expect(headers['anthropic-beta']).toBe('a-1,b-2');
  });

  it('refuses what is not a JSON object', async () => {
    const front = { model: () => 'claude-x', stream: null, betasInBody: false };
    await expect(messagesBody(Buffer.from('[1]'), {}, front)).rejects.toThrow(/JSON object/);
    await expect(messagesBody(Buffer.from('{'), {}, front)).rejects.toThrow(/not valid JSON/);
  });
});

describe("Bedrock's answer shapes", () => {
  it('a chunk frame decodes, as the AWS SDKs read it, to the event bytes in base64', () => {
    const codec = new EventStreamCodec(
      (b) => Buffer.from(b).toString(),
      (s) => Buffer.from(s),
    );
    const event = '{"type":"message_stop"}';
    const message = codec.decode(chunkFrame(event));
    expect(message.headers[':event-type']?.value).toBe('chunk');
    expect(message.headers[':message-type']?.value).toBe('event');
    const payload = JSON.parse(Buffer.from(message.body).toString()) as { bytes: string };
    expect(Buffer.from(payload.bytes, 'base64').toString()).toBe(event);
  });

  it('a provider error becomes {message} and its exception name', () => {
    const body = JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
    expect(bedrockError(body)).toEqual({
      body: JSON.stringify({ message: 'slow down' }),
      exception: 'ThrottlingException',
    });
    expect(bedrockError('not json')).toBeNull();
  });
});
