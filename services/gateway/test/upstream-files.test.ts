import type { CloudEmulator } from '@keygate/emulator';
import { beforeAll, describe, expect, it } from 'vitest';
import { addMember } from '../src/accounts/members';
import { api } from './harness';
import { awsUpstreams, type AddedUpstream } from './kit/aws-upstreams';
import { batchRequests } from './kit/batch-requests';
import { upstreamSuite } from './kit/upstream-suite';

/**
 * Files made on an account upstream (issue 31 item 4, after batches): a file lives where it was
 * uploaded, so its retrieve, content and delete, and the messages that name it, reach that
 * upstream alone with its own key and workspace, whatever the account's order is now;
 * a file whose upstream was removed is a 502 naming it and is sent to no other host; a message
 * naming files on two upstreams is refused before either sees it; and an admin's lists show the
 * account's files and batches on every upstream, paged newest first.
 */
const FILES_BETA = 'files-api-2025-04-14';
const upstreams = upstreamSuite();
const { suite, op } = upstreams;
const aws = awsUpstreams(upstreams);
const gateway = () => suite.stack.gateway.url;
const sql = () => suite.stack.gateway.store.db.sql;

/** An admin member's live key: the account-wide lists. */
let adminKey: string;
beforeAll(async () => {
  const scope = { accountId: suite.stack.account.id, actor: 'test' };
  const admin = await addMember(suite.stack.deps as never, scope, {
    email: 'files-admin@example.com',
    role: 'admin',
  });
  adminKey = (await suite.stack.newKey({ memberId: admin.id })).secret;
});

async function upload(name: string, key = suite.stack.appKey): Promise<string> {
  const form = new FormData();
  form.set('file', new Blob([`the ${name} report`], { type: 'text/plain' }), `${name}.txt`);
  const res = await fetch(`${gateway()}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'anthropic-beta': FILES_BETA },
    body: form,
  });
  const body = (await res.json()) as { id: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.id;
}

const file = (id: string, opts: { method?: string; suffix?: string; key?: string } = {}) =>
  fetch(`${gateway()}/v1/files/${id}${opts.suffix ?? ''}`, {
    method: opts.method ?? 'GET',
    headers: { authorization: `Bearer ${opts.key ?? suite.stack.appKey}`, 'anthropic-beta': FILES_BETA },
  });

/** A message whose documents are these files. */
const params = (...ids: string[]) => ({
  model: 'claude-haiku-4-5',
  max_tokens: 32,
  messages: [
    {
      role: 'user',
      content: [
        ...ids.map((id) => ({ type: 'document', source: { type: 'file', file_id: id } })),
        { type: 'text', text: 'Summarise.' },
      ],
    },
  ],
});
const naming = (...ids: string[]) =>
  api(gateway(), '/v1/messages', {
    bearer: suite.stack.appKey,
    headers: { 'anthropic-beta': FILES_BETA },
    body: params(...ids),
  });

const filePaths = (c: CloudEmulator) => c.received.filter((r) => r.path.startsWith('/v1/files'));
const messagePaths = (c: CloudEmulator) => c.received.filter((r) => r.path === '/v1/messages');
const batchPaths = (c: CloudEmulator) => c.received.filter((r) => r.path.startsWith('/v1/messages/batches'));
const reorder = async (...first: AddedUpstream[]) => {
  const order = await op('/upstreams/order', { ids: first.map((u) => u.id) });
  expect(order.status, JSON.stringify(order.body)).toBe(200);
};

describe('a file uploaded through an account upstream', () => {
  it('is read, downloaded, named by a message and deleted there after another upstream takes the first place', async () => {
    // Workspace keys: an upload streams unread, and a SigV4 signature covers the body's hash.
    const home = await aws.bearer('home');
    const id = await upload('moved');
    const other = await aws.bearer();
    await reorder(other, home);

    const got = await file(id);
    expect(got.status).toBe(200);
    expect(await got.json()).toMatchObject({ id, filename: 'moved.txt' });
    const content = await file(id, { suffix: '/content' });
    expect(content.status).toBe(200);
    expect(await content.text()).toBe('the moved report');

    // Messages would take `other` first; a message naming the file goes where the file lives.
    const message = await naming(id);
    expect(message.status, JSON.stringify(message.body)).toBe(200);
    expect(messagePaths(home.cloud)).toHaveLength(1);
    expect(messagePaths(other.cloud)).toHaveLength(0);
    // A message naming nothing still goes first to `other`.
    const plain = await api(gateway(), '/v1/messages', {
      bearer: suite.stack.appKey,
      body: { model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(plain.status).toBe(200);
    expect(messagePaths(other.cloud)).toHaveLength(1);
    // So does a batch whose requests name it, and it is then followed there.
    const batch = await api(gateway(), '/v1/messages/batches', {
      bearer: suite.stack.appKey,
      headers: { 'anthropic-beta': FILES_BETA },
      body: { requests: [{ custom_id: 'doc', params: params(id) }] },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(await sql()`select upstream_id from batches where id = ${batch.body.id}`).toEqual([
      { upstream_id: home.id },
    ]);
    expect(batchPaths(home.cloud).map((r) => r.method)).toContain('POST');
    expect(batchPaths(other.cloud)).toHaveLength(0);

    const [row] = await sql()`select upstream_id from provider_objects where id = ${id}`;
    expect(row).toEqual({ upstream_id: home.id });
    const deleted = await file(id, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(home.cloud.handler.surface.files.files.has(id)).toBe(false);

    expect(filePaths(other.cloud)).toHaveLength(0);
    // The follower's reads of the batch come when they come: the rest, in order.
    const seen = home.cloud.received.filter((r) => !r.path.startsWith('/v1/messages/batches'));
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/files',
      `GET /v1/files/${id}`,
      `GET /v1/files/${id}/content`,
      'POST /v1/messages',
      `DELETE /v1/files/${id}`,
    ]);
    expect(seen.every((r) => r.refused === null)).toBe(true);
    expect(seen.every((r) => r.headers.authorization === 'Bearer aws-home-workspace-key-0123456789')).toBe(
      true,
    );
    expect(seen.every((r) => r.headers['anthropic-workspace-id'] === 'wrkspc_home01')).toBe(true);
    // Recorded as served by that upstream.
    const calls = (await suite.stack.calls()).filter((c) => c.endpoint.includes('/v1/files/{id}'));
    expect(calls.map((c) => [c.endpoint, c.upstream])).toEqual(
      expect.arrayContaining([
        ['GET /v1/files/{id}', home.id],
        ['DELETE /v1/files/{id}', home.id],
      ]),
    );
  });

  it('whose upstream was removed is a 502 naming it, and is sent to no other host', async () => {
    const home = await aws.bearer('home');
    const id = await upload('removed');
    const other = await aws.bearer();
    expect((await op(`/upstreams/${home.id}`, undefined, 'DELETE')).status).toBe(200);

    const because = `upstream ${home.id}, which has since been removed`;
    for (const res of [
      await file(id),
      await file(id, { suffix: '/content' }),
      await file(id, { method: 'DELETE' }),
    ]) {
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(res.status, JSON.stringify(body)).toBe(502);
      expect(body.error.type).toBe('api_error');
      expect(body.error.message).toContain(because);
      expect(res.headers.get('x-should-retry')).toBe('false');
    }
    const message = await naming(id);
    expect(message.status).toBe(502);
    expect(message.body.error.message).toContain(because);
    // The key's own list leaves it out, without forgetting it.
    const listed = await api(gateway(), '/v1/files', {
      bearer: suite.stack.appKey,
      headers: { 'anthropic-beta': FILES_BETA },
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((f: { id: string }) => f.id)).not.toContain(id);
    const [owned] = await sql()`select deleted_at from provider_objects where id = ${id}`;
    expect(owned).toEqual({ deleted_at: null });
    expect(other.cloud.received).toHaveLength(0);
  });

  it('named with a file of another upstream in one message: a 400 naming both, nothing sent', async () => {
    const a = await aws.bearer('first');
    const onA = await upload('first');
    const b = await aws.bearer();
    await reorder(b, a);
    const onB = await upload('second');
    const message = await naming(onA, onB);
    expect(message.status).toBe(400);
    expect(message.body.error.type).toBe('invalid_request_error');
    expect(message.body.error.message).toContain(`${onA} on the account's upstream ${a.id}`);
    expect(message.body.error.message).toContain(`${onB} on the account's upstream ${b.id}`);
    expect([...messagePaths(a.cloud), ...messagePaths(b.cloud)]).toHaveLength(0);
  });
});

describe("an admin's lists of an account with upstreams", () => {
  it('show files and batches of every upstream, newest first, in the provider’s paging shapes', async () => {
    const a = await aws.bearer('first');
    const fileA = await upload('admin-a', adminKey);
    const batchA = await api(gateway(), '/v1/messages/batches', {
      bearer: adminKey,
      body: { requests: batchRequests(1, 'admin-a') },
    });
    expect(batchA.status, JSON.stringify(batchA.body)).toBe(200);
    const b = await aws.bearer();
    await reorder(b, a);
    // Made by another key of the account: an admin sees the account's, not only their own.
    const fileB = await upload('admin-b');
    const batchB = await api(gateway(), '/v1/messages/batches', {
      bearer: suite.stack.appKey,
      body: { requests: batchRequests(1, 'admin-b') },
    });
    expect(batchB.status, JSON.stringify(batchB.body)).toBe(200);
    const list = (path: string, beta = true) =>
      api(gateway(), path, { bearer: adminKey, headers: beta ? { 'anthropic-beta': FILES_BETA } : {} });

    // Files of the earlier tests lived on upstreams since removed: left out, only these two show.
    const files = await list('/v1/files?limit=10');
    expect(files.status, JSON.stringify(files.body)).toBe(200);
    expect(files.body).toMatchObject({ has_more: false, first_id: fileB, last_id: fileA });
    expect(files.body.data.map((f: { id: string }) => f.id)).toEqual([fileB, fileA]);
    const first = await list('/v1/files?limit=1');
    expect(first.body).toMatchObject({ has_more: true, first_id: fileB, last_id: fileB });
    const next = await list(`/v1/files?limit=1&after_id=${fileB}`);
    expect(next.body).toMatchObject({ has_more: false, first_id: fileA, last_id: fileA });
    // The GA shape without the beta value: `data` and `next_page`.
    const ga = await list('/v1/files?limit=1', false);
    expect(ga.body).toEqual({ data: [expect.objectContaining({ id: fileB })], next_page: fileB });
    const gaNext = await list(`/v1/files?limit=1&page=${fileB}`, false);
    expect(gaNext.body).toEqual({ data: [expect.objectContaining({ id: fileA })], next_page: null });

    const batches = await list('/v1/messages/batches?limit=10');
    expect(batches.status, JSON.stringify(batches.body)).toBe(200);
    expect(batches.body.data.map((x: { id: string }) => x.id)).toEqual([batchB.body.id, batchA.body.id]);
    expect(batches.body.data[1]).toMatchObject({ type: 'message_batch', processing_status: 'in_progress' });
    // Each object was read where it lives, and nothing of one upstream's reached the other.
    expect(a.cloud.received.map((r) => r.path)).not.toContain(`/v1/files/${fileB}`);
    expect(b.cloud.received.map((r) => r.path)).not.toContain(`/v1/files/${fileA}`);
    expect(b.cloud.received.map((r) => r.path)).not.toContain(`/v1/messages/batches/${batchA.body.id}`);
  });
});
