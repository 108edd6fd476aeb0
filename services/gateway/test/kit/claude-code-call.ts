import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Claude Code 2.1.330's first call as captured: 12 tools, three system blocks with cache_control, opus-5-5, 128,000 max_tokens, streaming. */
const CAPTURE = fileURLToPath(
  new URL('../../../../packages/emulator/test/fixtures/claude-code-2.1.330-request.json', import.meta.url),
);

const HEADERS: Record<string, string> = JSON.parse(
  readFileSync(CAPTURE.replace(/\.json$/, '-headers.json'), 'utf8'),
).headers;
delete HEADERS['accept-encoding'];

const WORDS =
  'the gateway reads each tool result and the file it came from before it edits a line of code'.split(' ');

function filler(bytes: number, seed: number): string {
  const out: string[] = [];
  let n = 0;
  for (let i = seed; n < bytes; i++) {
    const w = `${WORDS[i % WORDS.length]}${i % 7 === 0 ? `_${i}` : ''}`;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(' ');
}

/**
 * A call late in a Claude Code session: the captured call plus a long history (a turn pair of
 * about 90% of `bytes`, its end marked for the cache as Claude Code marks its last turn), then a
 * new user turn of the remaining 10%, uncached. The same `stream` gives the same prefix, so its
 * next call reads it from the cache, as a session does.
 */
export function claudeCodeBody(bytes: number, stream = 0): Record<string, any> {
  const body = JSON.parse(readFileSync(CAPTURE, 'utf8'));
  const base = Buffer.byteLength(JSON.stringify(body));
  const room = Math.max(0, bytes - base - 400);
  body.messages.push(
    { role: 'assistant', content: [{ type: 'text', text: `Reading the files of stream ${stream}.` }] },
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: filler(Math.floor(room * 0.9), stream * 1_000),
          cache_control: { type: 'ephemeral' },
        },
      ],
    },
    { role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
    { role: 'user', content: [{ type: 'text', text: filler(Math.floor(room * 0.1), stream * 1_000 + 7) }] },
  );
  return body;
}

export interface Answer {
  status: number;
  headers: Headers;
  /** The error body's type and message (null for a 200). */
  error: { type: string; message: string } | null;
}

/** Sends a body with the captured call's headers, as Claude Code does (streaming), and reads the whole answer. */
export async function claudeCodeCall(
  base: string,
  appKey: string,
  body: Record<string, any>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${base}/v1/messages?beta=true`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: `Bearer ${appKey}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    error: res.status === 200 ? null : JSON.parse(text).error,
  };
}
