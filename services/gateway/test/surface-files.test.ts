import { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure, startSurfaceStack, type SurfaceStack } from './surface-kit';

const FILES_BETA = 'files-api-2025-04-14';
const bytesOf = (n: number, seed: number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * seed) % 251));

describe('Files through the gateway', () => {
  let s: SurfaceStack;
  beforeAll(async () => {
    s = await startSurfaceStack({ KEYGATE_MAX_FILE_BYTES: String(256 * 1024) });
  });
  afterAll(() => s?.stack.close());

  it('the official SDK gets the same answers through the gateway as straight at the emulator, for every method', async () => {
    const bytes = bytesOf(40_000, 7);
    const upload = async (c: SurfaceStack['direct']) =>
      c.beta.files.upload({
        file: await toFile(bytes, 'report.pdf', { type: 'application/pdf' }),
        betas: [FILES_BETA],
      });
    const [viaGateway, direct] = [await upload(s.alice.client), await upload(s.direct)];
    const stable = (f: object) => {
      const { id: _id, created_at: _at, ...rest } = f as Record<string, unknown>;
      return rest;
    };
    expect(stable(viaGateway)).toEqual(stable(direct));
    expect(viaGateway).toMatchObject({ type: 'file', filename: 'report.pdf', size_bytes: 40_000 });

    // The beta value selects the beta shape (no expires_at); without it, the GA one (files-skills-ga.test.ts).
    const betas = [FILES_BETA];
    expect(await s.alice.client.beta.files.retrieveMetadata(viaGateway.id, { betas })).toEqual(viaGateway);
    expect(await s.direct.beta.files.retrieveMetadata(direct.id, { betas })).toEqual(direct);

    const listed = await s.alice.client.beta.files.list();
    expect(listed.data.map((f) => f.id)).toContain(viaGateway.id);

    const [down, downDirect] = await Promise.all([
      s.alice.client.beta.files.download(viaGateway.id),
      s.direct.beta.files.download(direct.id),
    ]);
    expect(Buffer.from(await down.arrayBuffer())).toEqual(bytes);
    expect(Buffer.from(await downDirect.arrayBuffer())).toEqual(bytes);
    expect(down.headers.get('content-type')).toBe(downDirect.headers.get('content-type'));

    expect(await s.alice.client.beta.files.delete(viaGateway.id)).toEqual({
      id: viaGateway.id,
      type: 'file_deleted',
    });
    expect(await s.direct.beta.files.delete(direct.id)).toEqual({ id: direct.id, type: 'file_deleted' });
    const gone = await failure(s.alice.client.beta.files.retrieveMetadata(viaGateway.id));
    const goneDirect = await failure(s.direct.beta.files.retrieveMetadata(direct.id));
    expect(gone).toEqual({ status: 404, type: 'not_found_error', message: expect.any(String) });
    expect(goneDirect.status).toBe(404);

    // Each is a call in the call log: bytes, status, latency, no tokens.
    const calls = (await s.stack.calls()).filter((c) => c.key_id === s.alice.keyId);
    const byEndpoint = (e: string) => calls.filter((c) => c.endpoint === e);
    const [up] = byEndpoint('POST /v1/files');
    expect(up).toMatchObject({ status: 200, input_tokens: 0, output_tokens: 0, member_id: s.alice.memberId });
    expect(Number(up!.request_bytes)).toBeGreaterThan(40_000);
    const [dl] = byEndpoint('GET /v1/files/{id}/content');
    expect(dl).toMatchObject({ status: 200, input_tokens: 0 });
    expect(Number(dl!.response_bytes)).toBe(40_000);
    expect(dl!.latency_ms).toBeGreaterThan(0);
    expect(byEndpoint('DELETE /v1/files/{id}')).toHaveLength(1);
    expect(byEndpoint('GET /v1/files/{id}').map((c) => c.status)).toEqual([200, 404]);
  });

  it("member B gets 404 for member A's file by id, by list and by reference in a message; admins see it", async () => {
    const file = await s.alice.client.beta.files.upload({
      file: await toFile(bytesOf(1000, 3), 'alice.txt', { type: 'text/plain' }),
      betas: [FILES_BETA],
    });
    for (const attempt of [
      () => s.bob.client.beta.files.retrieveMetadata(file.id),
      () => s.bob.client.beta.files.download(file.id),
      () => s.bob.client.beta.files.delete(file.id),
    ]) {
      expect(await failure(attempt())).toEqual({
        status: 404,
        type: 'not_found_error',
        message: `File not found: ${file.id}`,
      });
    }
    expect((await s.bob.client.beta.files.list()).data.map((f) => f.id)).not.toContain(file.id);

    const before = s.stack.emulator.ledger.entries.length;
    const message = (c: SurfaceStack['direct']) =>
      c.beta.messages.create({
        model: 'claude-haiku-4-5',
        max_tokens: 16,
        betas: [FILES_BETA],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'file', file_id: file.id } },
              { type: 'text', text: 'Summarise.' },
            ],
          },
        ],
      });
    expect(await failure(message(s.bob.client))).toEqual({
      status: 404,
      type: 'not_found_error',
      message: `File not found: ${file.id}`,
    });
    expect(s.stack.emulator.ledger.entries.length).toBe(before);
    // The owner and an admin may use it.
    expect((await message(s.alice.client)).type).toBe('message');
    expect((await message(s.admin.client)).type).toBe('message');

    expect((await s.admin.client.beta.files.list()).data.map((f) => f.id)).toContain(file.id);
    expect((await s.admin.client.beta.files.retrieveMetadata(file.id)).id).toBe(file.id);
    expect((await s.alice.client.beta.files.list()).data.map((f) => f.id)).toContain(file.id);
  });

  it("member B gets 404 for member A's file referred to under a key written with escapes, as the provider reads it", async () => {
    const file = await s.alice.client.beta.files.upload({
      file: await toFile(bytesOf(500, 5), 'alice-escaped.txt', { type: 'text/plain' }),
      betas: [FILES_BETA],
    });
    const before = s.stack.emulator.ledger.entries.length;
    // JSON reads "file\u005fid" as file_id; so does the provider. A search of the raw bytes for
    // "file_id" did not find it, and the call went upstream with the account's provider key.
    const source = `{"type":"file","file\\u005fid":${JSON.stringify(file.id)}}`;
    const res = await fetch(`${s.stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${s.bob.key}`,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': FILES_BETA,
      },
      body: `{"model":"claude-haiku-4-5","max_tokens":16,"messages":[{"role":"user","content":[{"type":"document","source":${source}},{"type":"text","text":"Summarise."}]}]}`,
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      `File not found: ${file.id}`,
    );
    expect(s.stack.emulator.ledger.entries.length).toBe(before);
  });

  it('refuses an upload over the limit while it streams, with or without a length, in the provider shape', async () => {
    const big = bytesOf(400 * 1024, 5);
    const declared = await failure(
      s.alice.client.beta.files.upload({ file: await toFile(big, 'big.bin'), betas: [FILES_BETA] }),
    );
    expect(declared).toMatchObject({ status: 413, type: 'request_too_large' });

    // Chunked: no content-length, so only counting the bytes as they pass can stop it.
    const boundary = 'kgboundary';
    const head = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const parts = [head, big, tail];
    const stream = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        const next = parts.shift();
        if (next) ctrl.enqueue(next);
        else ctrl.close();
      },
    });
    const before = s.stack.emulator.surface.files.files.size;
    const res = await fetch(`${s.stack.gateway.url}/v1/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${s.alice.key}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'anthropic-beta': FILES_BETA,
      },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    expect(s.stack.emulator.surface.files.files.size).toBe(before);
  });
});
