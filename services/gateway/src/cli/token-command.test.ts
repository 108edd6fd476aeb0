import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Config } from '../config';
import { tokenCommand } from './token-command';

// An identity provider (behind a gateway) whose every word carries terminal escapes: OSC 0
// (retitle), OSC 52 (write the clipboard), CSI (clear the screen), C1 CSI and a bidi override.
const hostile = {
  '/idp/v1/device/code': {
    provider: 'Okta\u001b]0;owned\u0007',
    verification_uri: 'https://idp.example/\u001b[2J',
    user_code: 'AB\u009b2JCD',
    interval: 0.001,
    expires_in: 60,
    device_code: 'dc',
  },
  '/idp/v1/device/token': {
    status: 'ok',
    token: 'kgt_one\u001b]52;c;ZXZpbA==\u0007',
    refresh_token: 'rt',
    email: 'ann@example.com\u202e',
    member_id: 'mem_1',
  },
  '/idp/v1/token': { token: 'kgt_two\u001b[31m' },
} as Record<string, unknown>;

const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;

describe('keygate token prints what the gateway answered with controls escaped', () => {
  let server: Server;
  let base = '';
  const dir = mkdtempSync(join(tmpdir(), 'keygate-token-'));
  beforeAll(async () => {
    vi.stubEnv('XDG_CONFIG_HOME', dir);
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end(JSON.stringify(hostile[req.url ?? ''] ?? {})));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    rmSync(dir, { recursive: true, force: true });
    await new Promise<void>((r) => server.close(() => r()));
  });

  const run = async () => {
    const out: string[] = [];
    const err: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((s) => out.push(String(s)) > 0);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((s) => err.push(String(s)) > 0);
    try {
      const code = await tokenCommand.run!({ url: base, account: 'acct_1' }, {} as Config);
      return { code, stdout: out.join(''), stderr: err.join('') };
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }
  };

  it('on sign-in (device flow) and on renewal', async () => {
    const first = await run();
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('kgt_one\\x1b]52;c;ZXZpbA==\\x07\n');
    expect(first.stderr).not.toMatch(RAW);
    expect(first.stderr).toContain('Sign in to Keygate with Okta\\x1b]0;owned\\x07:');
    expect(first.stderr).toContain('and enter the code AB\\x9b2JCD');
    expect(first.stderr).toContain('Signed in as ann@example.com\\u202e.');

    const renewed = await run();
    expect(renewed.code).toBe(0);
    expect(renewed.stdout).toBe('kgt_two\\x1b[31m\n');
  });
});
