import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { EmulatorError, invalid } from './errors';
import { jsonHeaders, sendError, sendJson, type Exchange } from './http';
import { betaForm, cursorPage, FILES_BETA } from './ga-forms';
import { randomBase62 } from './ids';
import type { Json } from './types';

/**
 * The provider's Files API: upload (multipart, field `file`), list, metadata, content, delete,
 * in the GA shapes and, with beta `files-api-2025-04-14`, the beta ones (ga-forms.ts). Shapes
 * from the official TypeScript SDK 1.11's `resources/files` and `resources/beta/files` types and
 * https://docs.claude.com/en/docs/build-with-claude/files, read 2026-11-25 and 2026-11-29. Files
 * keep their bytes in memory: the emulator is a test double.
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
    /** GA only: when the bytes stop being available, null when they do not expire. */
    expires_at: string | null;
  };
  bytes: Buffer;
}

/** `expires_in_seconds` bounds (GA `FileUploadParams`: one hour to ninety days). */
const MIN_EXPIRY_S = 3600;
const MAX_EXPIRY_S = 7_776_000;

/** The metadata in the request's form: the beta shape has no expiry. */
function shown(meta: StoredFile['meta'], beta: boolean): Json {
  if (!beta) return meta;
  const { expires_at: _, ...rest } = meta;
  return rest;
}

export class FileStore {
  readonly files = new Map<string, StoredFile>();

  get(id: string): StoredFile {
    const file = this.files.get(id);
    if (!file) throw new EmulatorError('not_found_error', `File not found: ${id}`);
    return file;
  }

  /** Newest first: the GA cursor page (`page`, `next_page`), or the beta one (`before_id`, `after_id`). */
  list(query: URLSearchParams, beta: boolean): Json {
    const metas = [...this.files.values()].map((f) => f.meta);
    if (!beta) return cursorPage(metas, query);
    const p = page(metas, query) as { data: StoredFile['meta'][] };
    return { ...p, data: p.data.map((m) => shown(m, true)) };
  }
}

/**
 * Routes `/v1/files…`; false when the path is not a files path. `preread`: the body, when the host
 * server read it already (the cloud emulator checks a signature over it first).
 */
export function handleFiles(
  ex: Exchange,
  store: FileStore,
  path: string,
  query: URLSearchParams,
  preread?: Buffer,
): boolean {
  const method = ex.req.method;
  const m = /^\/v1\/files(?:\/([^/]+)(\/content)?)?$/.exec(path);
  if (!m) return false;
  const [, id, content] = m;
  const beta = betaForm(ex.req, FILES_BETA);
  if (!id && method === 'POST') {
    upload(ex.req, store, preread).then(
      (file) => sendJson(ex, 200, JSON.stringify(shown(file.meta, beta)), jsonHeaders(ex.requestId, false)),
      (err: EmulatorError) => fail(ex, err),
    );
    return true;
  }
  if (!id && method === 'GET') return json(ex, store.list(query, beta));
  if (id && !content && method === 'GET') return json(ex, shown(store.get(id).meta, beta));
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

async function upload(req: IncomingMessage, store: FileStore, preread?: Buffer): Promise<StoredFile> {
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('multipart/form-data'))
    throw invalid('Expected a multipart/form-data body with a `file` field.');
  let size = 0;
  const limited = Readable.from(
    (async function* () {
      for await (const chunk of (preread ? [preread] : req) as AsyncIterable<Buffer>) {
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
  const now = Date.now();
  const expiresIn = form.get('expires_in_seconds');
  let expiresAt: string | null = null;
  if (expiresIn !== null) {
    const seconds = Number(expiresIn);
    if (
      typeof expiresIn !== 'string' ||
      !Number.isInteger(seconds) ||
      seconds < MIN_EXPIRY_S ||
      seconds > MAX_EXPIRY_S
    )
      throw invalid(`expires_in_seconds: must be an integer from ${MIN_EXPIRY_S} to ${MAX_EXPIRY_S}.`);
    expiresAt = new Date(now + seconds * 1000).toISOString();
  }
  const stored: StoredFile = {
    meta: {
      type: 'file',
      id: `file_011${randomBase62(21)}`,
      filename: file.name || 'upload',
      mime_type: file.type || 'application/octet-stream',
      size_bytes: file.size,
      created_at: new Date(now).toISOString(),
      // The provider marks uploads not downloadable; the emulator lets tests read the bytes back.
      downloadable: true,
      expires_at: expiresAt,
    },
    bytes: Buffer.from(await file.arrayBuffer()),
  };
  store.files.set(stored.meta.id, stored);
  return stored;
}

/** The provider's id cursor page (the beta lists') over objects with `id`, newest first. */
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
