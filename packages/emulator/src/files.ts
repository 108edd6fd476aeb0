import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { EmulatorError, invalid } from './errors';
import { jsonHeaders, sendError, sendJson, type Exchange } from './http';
import { randomBase62 } from './ids';
import type { Json } from './types';

/**
 * The provider's Files API (beta `files-api-2025-04-14`): upload (multipart, field `file`),
 * list, metadata, content, delete. Shapes from the official TypeScript SDK 1.11's
 * `resources/beta/files` types and https://docs.claude.com/en/docs/build-with-claude/files,
 * read 2026-11-25. Files keep their bytes in memory: the emulator is a test double.
 */
export const MAX_FILE_BYTES = 500 * 1024 * 1024;

export interface StoredFile {
  meta: {
    type: 'file';
    id: string;
    filename: string;
    mime_type: string;
    size_bytes: number;
    created_at: string;
    downloadable: boolean;
  };
  bytes: Buffer;
}

export class FileStore {
  readonly files = new Map<string, StoredFile>();

  get(id: string): StoredFile {
    const file = this.files.get(id);
    if (!file) throw new EmulatorError('not_found_error', `File not found: ${id}`);
    return file;
  }

  /** Newest first, the provider's cursor page (`before_id`, `after_id`, `limit` 1–1000). */
  list(query: URLSearchParams): Json {
    return page(
      [...this.files.values()].map((f) => f.meta),
      query,
    );
  }
}

/** Routes `/v1/files…`; false when the path is not a files path. */
export function handleFiles(ex: Exchange, store: FileStore, path: string, query: URLSearchParams): boolean {
  const method = ex.req.method;
  const m = /^\/v1\/files(?:\/([^/]+)(\/content)?)?$/.exec(path);
  if (!m) return false;
  const [, id, content] = m;
  if (!id && method === 'POST') {
    upload(ex.req, store).then(
      (file) => sendJson(ex, 200, JSON.stringify(file.meta), jsonHeaders(ex.requestId, false)),
      (err: EmulatorError) => fail(ex, err),
    );
    return true;
  }
  if (!id && method === 'GET') return json(ex, store.list(query));
  if (id && !content && method === 'GET') return json(ex, store.get(id).meta);
  if (id && !content && method === 'DELETE') {
    store.get(id);
    store.files.delete(id);
    return json(ex, { id, type: 'file_deleted' });
  }
  if (id && content && method === 'GET') {
    const file = store.get(id);
    if (!file.meta.downloadable) throw invalid(`File ${id} is not downloadable.`);
    ex.res.writeHead(200, [
      'content-type',
      file.meta.mime_type,
      'content-length',
      String(file.bytes.length),
      'content-disposition',
      `attachment; filename="${file.meta.filename.replace(/["\\\r\n]/g, '_')}"`,
      'request-id',
      ex.requestId,
    ]);
    ex.res.end(file.bytes);
    if (ex.entry) {
      ex.entry.status = 200;
      ex.ledger.close(ex.entry, true, Date.now());
    }
    return true;
  }
  throw new EmulatorError('not_found_error', `Not found: ${method} ${path}`);
}

function json(ex: Exchange, body: unknown): true {
  sendJson(ex, 200, JSON.stringify(body), jsonHeaders(ex.requestId, false));
  return true;
}

function fail(ex: Exchange, err: unknown): void {
  const e =
    err instanceof EmulatorError ? err : new EmulatorError('invalid_request_error', (err as Error).message);
  if (!ex.req.complete) ex.res.setHeader('connection', 'close');
  sendError(ex, e);
}

async function upload(req: IncomingMessage, store: FileStore): Promise<StoredFile> {
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('multipart/form-data'))
    throw invalid('Expected a multipart/form-data body with a `file` field.');
  let size = 0;
  const limited = Readable.from(
    (async function* () {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_FILE_BYTES + 64 * 1024)
          throw new EmulatorError(
            'request_too_large',
            `File exceeds the maximum size of ${MAX_FILE_BYTES} bytes.`,
          );
        yield chunk;
      }
    })(),
  );
  const form = await new Request('http://emulator.invalid/v1/files', {
    method: 'POST',
    headers: { 'content-type': type },
    body: Readable.toWeb(limited) as ReadableStream,
    duplex: 'half',
  } as RequestInit).formData();
  const file = form.get('file');
  if (!file || typeof file === 'string') throw invalid('file: Field required');
  if (file.size > MAX_FILE_BYTES)
    throw new EmulatorError('request_too_large', `File exceeds the maximum size of ${MAX_FILE_BYTES} bytes.`);
  const stored: StoredFile = {
    meta: {
      type: 'file',
      id: `file_011${randomBase62(21)}`,
      filename: file.name || 'upload',
      mime_type: file.type || 'application/octet-stream',
      size_bytes: file.size,
      created_at: new Date().toISOString(),
      // The provider marks uploads not downloadable; the emulator lets tests read the bytes back.
      downloadable: true,
    },
    bytes: Buffer.from(await file.arrayBuffer()),
  };
  store.files.set(stored.meta.id, stored);
  return stored;
}

/** The provider's cursor page over objects with `id` and `created_at`, newest first. */
export function page<T extends { id: string }>(items: T[], query: URLSearchParams): Json {
  const limit = Number(query.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw invalid('limit: must be between 1 and 1000');
  let list = items.slice().reverse();
  const after = query.get('after_id');
  const before = query.get('before_id');
  if (after) list = list.slice(list.findIndex((x) => x.id === after) + 1 || list.length);
  if (before) {
    const at = list.findIndex((x) => x.id === before);
    list = at === -1 ? [] : list.slice(Math.max(0, at - limit), at);
  }
  const data = list.slice(0, limit);
  return {
    data,
    has_more: list.length > data.length,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  };
}
