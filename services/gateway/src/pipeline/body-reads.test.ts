/**
 * One body reader. Every route reads its request body through pipeline/body-reader.ts, mounted
 * with its family's bounds (bytes as sent, bytes once inflated, JSON depth and values): a body
 * read any other way reopens the stalls of issue 29 (an unbounded JSON.parse before the limiter).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(new URL(import.meta.url).pathname), '..');

/** The modules that may read a request body, and why. */
const READERS: Record<string, string> = {
  'pipeline/body-reader.ts': 'the one reader',
  'pipeline/proxied-body.ts':
    "/v1/messages' streaming reader (its hot path; same limits, bounded by boundJson)",
};

/**
 * The files that may call JSON.parse, and on what. None of it is a request body, except in the
 * reader itself and /v1/messages' parser, which parses what proxy/validate.ts bounded first.
 */
const JSON_PARSERS: Record<string, string> = {
  'pipeline/body-reader.ts': 'the one reader, after boundJson',
  'pipeline/json-body.ts': "/v1/messages' body, after validate.ts ran boundJson on it",
  'cloud-fronts/bedrock-answer.ts':
    "an error answer's body (the gateway's or the provider's), rewritten in Bedrock's shape",
  'account-api/analytics-routes.ts': 'a page cursor from the query string',
  'billing/reconcile.ts': 'a row id the gateway built itself',
  'call-log/segment.ts': 'call records from the spool on local disk',
  'store/backup-file.ts': 'the header and counts of a backup file keygate backup wrote',
  'cli/backend.ts': "the gateway's answer to the CLI",
  'cli/price-commands.ts': 'a price file on disk',
  'cli/token-command.ts': "saved tokens on disk, and the gateway's answers",
  'dashboard/idp-sign-in.tsx': 'the sign-in state the gateway sealed into a cookie',
  'federation/jwks.ts': "an issuer's key set and discovery document, bounded in size",
  'identity/tokens.ts': 'a refresh answer Keygate sealed itself (the reuse window)',
  'lib/data-dir.ts': 'files in the data directory',
  'pricing/catalog/price-book.ts': 'the price catalog on disk',
  'call-log/call-copy.ts': 'usage JSON from the database',
  'store/postgres-user.ts': "a package's package.json on disk",
  'streams/redis-events.ts': 'stream owners the gateway wrote to Redis',
  'surface/batch-follower.ts': "the provider's batch answers",
  'surface/exchange.ts': "the provider's answers",
  'surface/models-routes.ts': "the provider's model list",
  'surface/owned-list.ts': "the provider's list pages",
  'upstreams/google-token.ts':
    "an upstream's service-account key (checked when added, bounded by the route) and its token endpoint's answer",
  'upstreams/request.ts':
    'a /v1/messages body validate.ts bounded, written again for an upstream that maps its model or refuses a field',
};

/** Hono's and the Fetch API's ways to read a request body. */
const BODY_READ =
  /\.req\.(json|text|arrayBuffer|blob|formData|parseBody)\s*\(|\.req\.raw\.body\b|\.raw\.(json|text|arrayBuffer|blob|formData)\s*\(/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) ? [path] : [];
  });
}

const files = sources(SRC).map((path) => ({ file: relative(SRC, path), text: readFileSync(path, 'utf8') }));
const codeOf = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

describe('one request-body reader', () => {
  it('reads the sources', () => {
    expect(files.length).toBeGreaterThan(200);
    expect(files.map((f) => f.file)).toEqual(expect.arrayContaining(Object.keys(READERS)));
  });

  it('no module but the readers reads a request body (c.req.json, parseBody, arrayBuffer, text, raw.body)', () => {
    const reads = files
      .filter(({ file }) => !READERS[file])
      .flatMap(({ file, text }) =>
        codeOf(text)
          .split('\n')
          .filter((line) => BODY_READ.test(line))
          .map((line) => `${file}: ${line.trim()}`),
      );
    expect(reads).toEqual([]);
  });

  it("no module but the readers imports /v1/messages' reader", () => {
    const importers = files
      // The reader hands the surface routes /v1/messages' streaming reader (readProxiedBody).
      .filter(({ file }) => !file.startsWith('proxy/') && file !== 'pipeline/body-reader.ts')
      .filter(({ text }) => /from '[./]*proxy\/body'/.test(text))
      .map(({ file }) => file);
    expect(importers).toEqual([]);
  });

  it('JSON.parse only in the files allowed, each with its reason', () => {
    const parsers = files.filter(({ text }) => /JSON\.parse\s*\(/.test(codeOf(text))).map(({ file }) => file);
    expect(parsers.sort()).toEqual(Object.keys(JSON_PARSERS).sort());
  });
});
