import type Anthropic from '@anthropic-ai/sdk';
import { AnthropicError } from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Keygate } from './client';
import { KeygateError } from './errors';
import { fakeFetch, json, message, unitClient } from './test-support';

afterEach(() => vi.unstubAllEnvs());

const LIVE = 'kg_live_abcdefghijklmnopqrstuvwxyz0123456789AB';

function capture() {
  return fakeFetch(() => json(message('ok')));
}

const ask = (client: Anthropic) =>
  client.messages.create({
    model: 'claude-opus-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });

describe('construction', () => {
  it('refuses to start without an app key, naming what to set', () => {
    vi.stubEnv('KEYGATE_APP_KEY', '');
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-api03-secret');
    const error = (() => {
      try {
        new Keygate();
      } catch (e) {
        return e as KeygateError;
      }
    })();
    expect(error).toBeInstanceOf(KeygateError);
    expect(error).toBeInstanceOf(AnthropicError);
    expect(error?.code).toBe('missing_app_key');
    expect(error?.message).toMatch(/KEYGATE_APP_KEY/);
    expect(error?.message).toMatch(/ANTHROPIC_API_KEY is set, but Keygate never sends provider keys/);
  });

  it.each([
    ['appKey', { appKey: 'sk-ant-api03-abc' }],
    ['apiKey', { apiKey: 'sk-ant-api03-abc' }],
    ['authToken', { authToken: 'sk-ant-api03-abc' }],
  ])('refuses a provider key passed as %s', (_name, opts) => {
    expect(() => new Keygate(opts)).toThrow(
      expect.objectContaining({
        code: 'provider_key',
        message: expect.stringMatching(/provider key \(sk-ant-…\)/),
      }),
    );
  });

  it('refuses a provider key in KEYGATE_APP_KEY, and an admin key', () => {
    vi.stubEnv('KEYGATE_APP_KEY', 'sk-ant-api03-abc');
    expect(() => new Keygate()).toThrow(
      expect.objectContaining({ code: 'provider_key', message: expect.stringMatching(/^KEYGATE_APP_KEY/) }),
    );
    expect(() => new Keygate({ appKey: 'kg_admin_abc' })).toThrow(
      expect.objectContaining({ code: 'admin_key' }),
    );
  });

  it('refuses two keys, provider credential options, and bad Keygate options', () => {
    expect(() => new Keygate({ appKey: LIVE, authToken: LIVE })).toThrow(/Pass the app key once/);
    expect(() => new Keygate({ appKey: LIVE, profile: 'default' })).toThrow(
      expect.objectContaining({ code: 'unsupported_option' }),
    );
    expect(() => new Keygate({ appKey: LIVE, baseURL: 'ftp://nope' })).toThrow(
      /baseURL: must be an http\(s\) URL/,
    );
    expect(() => new Keygate({ appKey: LIVE, groupId: 'has space' })).toThrow(/groupId/);
    expect(() => new Keygate({ appKey: LIVE, onUsage: 'no' as never })).toThrow(
      /onUsage: must be a function/,
    );
  });

  it('reads KEYGATE_APP_KEY and KEYGATE_BASE_URL, never ANTHROPIC_BASE_URL; defaults to a local gateway', () => {
    vi.stubEnv('KEYGATE_APP_KEY', LIVE);
    vi.stubEnv('ANTHROPIC_BASE_URL', 'https://api.anthropic.com');
    expect(new Keygate().baseURL).toBe('http://127.0.0.1:8080');
    vi.stubEnv('KEYGATE_BASE_URL', 'https://keygate.example.com');
    const client = new Keygate();
    expect(client.baseURL).toBe('https://keygate.example.com');
    expect(client.authToken).toBe(LIVE);
    expect(client.apiKey).toBeNull();
  });
});

describe('what goes over the wire', () => {
  it('the app key as Bearer and no x-api-key, even when ANTHROPIC_API_KEY and ANTHROPIC_CUSTOM_HEADERS carry one', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-api03-from-env');
    vi.stubEnv('ANTHROPIC_CUSTOM_HEADERS', 'x-api-key: sk-ant-api03-custom\nx-team: blue');
    const { fetch, sent } = capture();
    const client = new Keygate({
      appKey: LIVE,
      baseURL: 'http://gateway.test',
      fetch,
      defaultHeaders: { 'X-Api-Key': 'sk-ant-api03-default' },
    });
    await ask(client);
    expect(sent[0]!.headers.get('authorization')).toBe(`Bearer ${LIVE}`);
    expect(sent[0]!.headers.has('x-api-key')).toBe(false);
    expect(sent[0]!.headers.get('x-team')).toBe('blue');
    expect(sent[0]!.url).toBe('http://gateway.test/v1/messages');
    expect(sent[0]!.headers.get('user-agent')).toMatch(/Keygate\/JS/);
  });

  it('an apiKey function is called per request and checked too', async () => {
    const { fetch, sent } = capture();
    let key = LIVE;
    const client = new Keygate({ apiKey: async () => key, baseURL: 'http://gateway.test', fetch });
    await ask(client);
    expect(sent[0]!.headers.get('authorization')).toBe(`Bearer ${LIVE}`);
    key = 'sk-ant-api03-rotated-wrongly';
    await expect(ask(client)).rejects.toThrow(/provider key/);
  });

  it('group(): every call carries keygate-group-id; a per-request header wins; the tracker is shared', async () => {
    const { fetch, sent } = capture();
    const client = unitClient(fetch);
    const group = client.group('invoice-42');
    expect(group).toBeInstanceOf(Keygate);
    expect(group.groupId).toBe('invoice-42');
    await ask(group);
    await group.messages.create(
      { model: 'm', max_tokens: 1, messages: [] },
      { headers: { 'keygate-group-id': 'override' } },
    );
    await ask(client);
    expect(sent.map((r) => r.headers.get('keygate-group-id'))).toEqual(['invoice-42', 'override', null]);
    expect(client.usage).toBe(group.usage);
    expect([...client.usage.byGroup().keys()]).toEqual(['invoice-42', 'override']);
    expect(client.group().groupId).toMatch(/^grp_[0-9a-f]{20}$/);
    expect(() => client.group('')).toThrow(/group id/);
  });

  it('withOptions copies keep the key, the tracker and onUsage; appKey replaces the key', async () => {
    const onUsage = vi.fn();
    const { fetch, sent } = capture();
    const client = unitClient(fetch, { onUsage });
    const copy = client.withOptions({ timeout: 1234 });
    await ask(copy);
    expect(copy.timeout).toBe(1234);
    expect(copy.usage).toBe(client.usage);
    expect(onUsage).toHaveBeenCalledTimes(1);
    const other = client.group('g').withOptions({ appKey: LIVE });
    await ask(other);
    expect(sent[1]!.headers.get('authorization')).toBe(`Bearer ${LIVE}`);
    expect(sent[1]!.headers.get('keygate-group-id')).toBe('g');
    expect(() => client.withOptions({ appKey: 'sk-ant-api03-x' })).toThrow(/provider key/);
  });

  it("the app's own middleware still runs, around Keygate's", async () => {
    const { fetch, sent } = capture();
    const seen: string[] = [];
    const client = unitClient(fetch, {
      middleware: [
        async (request, next) => {
          request.headers.set('x-app', 'yes');
          const response = await next(request);
          seen.push(String(response.status));
          return response;
        },
      ],
    });
    await ask(client);
    expect(sent[0]!.headers.get('x-app')).toBe('yes');
    expect(seen).toEqual(['200']);
    expect(client.usage.total().calls).toBe(1);
  });
});
