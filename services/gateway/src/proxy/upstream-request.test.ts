import { describe, expect, it } from 'vitest';
import { upstreamRequest, type UpstreamRules } from './upstream-request';

/** What a client sends: its app key both ways, hop-by-hop headers, one named by Connection, betas. */
const CLIENT = {
  host: 'gateway.example',
  connection: 'keep-alive, X-Hop-Secret',
  'x-hop-secret': 'for this hop only',
  'keep-alive': 'timeout=5',
  'transfer-encoding': 'chunked',
  'proxy-authorization': 'Basic cHJveHk=',
  authorization: 'Bearer kg_live_client_app_key',
  'x-api-key': 'kg_live_client_app_key',
  cookie: 'session=1',
  'keygate-resumable': 'true',
  'content-length': '999',
  'accept-encoding': 'gzip',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'files-api-2025-04-14, context-1m-2025-08-07,prompt-caching-2024-07-31',
  'content-type': 'application/json',
  'user-agent': 'Anthropic/JS 0.60.0',
  'x-stainless-lang': 'js',
};

const FAMILIES: {
  family: string;
  rules: UpstreamRules;
  path: string;
  auth: Record<string, string | undefined>;
}[] = [
  {
    family: 'messages through the account provider key',
    rules: { auth: 'x-api-key', credential: 'sk-provider' },
    path: '/v1/messages',
    auth: { 'x-api-key': 'sk-provider', authorization: undefined },
  },
  {
    family: 'the provider surface (files, batches, the passthrough) through the provider key',
    rules: { auth: 'x-api-key', credential: 'sk-provider' },
    path: '/v1/files',
    auth: { 'x-api-key': 'sk-provider', authorization: undefined },
  },
  {
    family: 'an upstream that takes a bearer token, under a base path, in a workspace',
    rules: { auth: 'bearer', credential: 'tok', pathPrefix: '/anthropic', workspaceId: 'wrkspc_1' },
    path: '/v1/messages',
    auth: { authorization: 'Bearer tok', 'x-api-key': undefined, 'anthropic-workspace-id': 'wrkspc_1' },
  },
  {
    family: 'a signed upstream (SigV4 added by its caller)',
    rules: { auth: 'signed', credential: 'aws-creds', refusedBetas: new Set(['context-1m-2025-08-07']) },
    path: '/v1/messages',
    auth: { authorization: undefined, 'x-api-key': undefined },
  },
];

describe('the one upstream request builder', () => {
  it.each(FAMILIES)(
    '$family: client credentials, hop-by-hop and Connection-named headers never reach it',
    (f) => {
      const out = upstreamRequest(CLIENT, f.path, Buffer.from('{}'), 2, f.rules);
      for (const [name, value] of Object.entries(f.auth)) expect(out.headers[name], name).toBe(value);
      expect(JSON.stringify(out.headers)).not.toContain('kg_live_client_app_key');
      for (const dropped of [
        'host',
        'connection',
        'x-hop-secret',
        'keep-alive',
        'transfer-encoding',
        'proxy-authorization',
        'cookie',
        'keygate-resumable',
      ])
        expect(out.headers[dropped], dropped).toBeUndefined();
      expect(out.headers['content-length']).toBe('2');
      expect(out.headers['accept-encoding']).toBe('identity');
      for (const kept of ['anthropic-version', 'content-type', 'user-agent', 'x-stainless-lang'] as const)
        expect(out.headers[kept], kept).toBe(CLIENT[kept]);
      expect(out.path).toBe((f.rules.pathPrefix ?? '') + f.path);
      expect(out.body?.toString()).toBe('{}');
    },
  );

  it("removes the upstream's refused betas and keeps the others; drops the header when none is left", () => {
    const some = upstreamRequest(CLIENT, '/v1/messages', null, null, {
      auth: 'x-api-key',
      credential: 'k',
      refusedBetas: new Set(['context-1m-2025-08-07']),
    });
    expect(some.headers['anthropic-beta']).toBe('files-api-2025-04-14,prompt-caching-2024-07-31');
    const none = upstreamRequest({ 'anthropic-beta': 'context-1m-2025-08-07' }, '/v1/messages', null, null, {
      auth: 'x-api-key',
      credential: 'k',
      refusedBetas: new Set(['context-1m-2025-08-07']),
    });
    expect(none.headers['anthropic-beta']).toBeUndefined();
    const untouched = upstreamRequest(CLIENT, '/v1/messages', null, null, {
      auth: 'x-api-key',
      credential: 'k',
    });
    expect(untouched.headers['anthropic-beta']).toBe(CLIENT['anthropic-beta']);
  });

  it('names the default API version when the client sends none, and no length for a body of unknown length', () => {
    const out = upstreamRequest({}, '/v1/models', null, null, { auth: 'x-api-key', credential: 'k' });
    expect(out.headers['anthropic-version']).toBe('2023-06-01');
    expect(out.headers['content-length']).toBeUndefined();
  });
});
