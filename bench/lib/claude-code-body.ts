/**
 * A Messages request shaped like Claude Code's late in a session, of about `bytes` bytes: 12
 * tools with JSON schemas, three system blocks (the last two with cache_control), and a history
 * of tool_use / tool_result turns (source files and command output, with the escapes real
 * code carries: newlines, quotes, backslashes, tabs, some non-ASCII), cache_control on the last
 * turn, streaming on. Deterministic for a given size. Below 64 KB there is no room for the
 * tools and the long prompt: the request is then the short kind Claude Code also sends (a title or
 * a quick question: short system blocks, one turn), padded to the size.
 */
export function claudeCodeBody(bytes: number, model = 'claude-opus-4-5'): Buffer {
  const small = bytes < 64 * 1024;
  const head = {
    model,
    max_tokens: 32_000,
    stream: true,
    metadata: { user_id: 'user_bench_account__session_0f9e2c41-7c5d-4a43-9d1b-6f5a2c8e1b3d' },
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
      {
        type: 'text',
        text: small ? 'Answer in one line.' : SYSTEM_PROMPT,
        cache_control: { type: 'ephemeral' },
      },
      {
        type: 'text',
        text: small ? 'cwd: /home/dev/app' : ENVIRONMENT,
        cache_control: { type: 'ephemeral' },
      },
    ],
    ...(small ? {} : { tools: TOOLS }),
  };
  const ask = 'Fix the failing test in src/server.ts and run the suite. ';
  const messages: unknown[] = [
    {
      role: 'user',
      content: [{ type: 'text', text: small ? ask.repeat(Math.ceil(bytes / ask.length)) : ask }],
    },
  ];
  const size = () => Buffer.byteLength(JSON.stringify({ ...head, messages }));
  // Grow the history a turn at a time, then trim the last tool result to land on the size.
  for (let turn = 0; !small && size() < bytes; turn++) {
    const id = `toolu_01${String(turn).padStart(6, '0')}Bench${(turn * 7919).toString(36)}`;
    const tool = TOOLS[turn % TOOLS.length]!.name;
    messages.push(
      {
        role: 'assistant',
        content: [
          { type: 'text', text: `Let me look at step ${turn} of this with ${tool}.` },
          {
            type: 'tool_use',
            id,
            name: tool,
            input: { file_path: `/home/dev/app/src/module-${turn}.ts`, limit: 400 },
          },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: toolOutput(turn) }] },
    );
  }
  const last = messages.at(-1) as { content: Record<string, unknown>[] };
  const block = last.content[0]!;
  block.cache_control = { type: 'ephemeral' };
  const field = block.type === 'text' ? 'text' : 'content';
  const text = String(block[field]);
  const over = size() - bytes;
  if (over > 0) block[field] = trimTo(text, text.length - over);
  return Buffer.from(JSON.stringify({ ...head, messages }));
}

/** Cuts a string to about `chars` characters without splitting a surrogate pair. */
function trimTo(s: string, chars: number): string {
  let out = s.slice(0, Math.max(0, chars));
  while (Buffer.byteLength(JSON.stringify(out)) > chars + 2 && out.length > 0) out = out.slice(0, -1);
  return out;
}

/** A file listing or command output as Claude Code's Read and Bash tools return it (`cat -n` style). */
function toolOutput(turn: number): string {
  const lines: string[] = [];
  const n = 60 + ((turn * 37) % 90);
  for (let i = 1; i <= n; i++) {
    const code = CODE[(turn + i) % CODE.length]!;
    lines.push(`${String(i).padStart(6, ' ')}\t${code}`);
  }
  return lines.join('\n');
}

export const CODE = [
  "import { createServer } from 'node:http';",
  'export async function handle(req: Request): Promise<Response> {',
  '  const body = await req.json() as { name?: string; "quoted-key"?: number };',
  '  if (!body.name) throw new Error(`missing "name" in ` + JSON.stringify(body));',
  '  return new Response(JSON.stringify({ ok: true, path: "C:\\\\Users\\\\dev" }));',
  '}',
  '// ✓ passes on Node 20 — résumé of the fix: keep the tab\tand the quote " intact',
  '  for (let i = 0; i < items.length; i++) total += items[i]!.price * 1.2;',
  "    expect(res.status).toBe(200); // 'ok'",
  ' FAIL  src/server.test.ts > handle > answers 400 on an empty body',
  '   AssertionError: expected 500 to be 400 // Object.is equality',
  '',
  '    at /home/dev/app/src/server.test.ts:42:27',
];

export const SYSTEM_PROMPT = `You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.\n\n${"# Tone and style\nYou should be concise, direct, and to the point. When you run a non-trivial bash command, you should explain what the command does and why you are running it.\n\n# Following conventions\nWhen making changes to files, first understand the file's code conventions. Mimic code style, use existing libraries and utilities, and follow existing patterns.\n\n".repeat(12)}`;

export const ENVIRONMENT = `<env>\nWorking directory: /home/dev/app\nIs directory a git repo: Yes\nPlatform: linux\nToday's date: 2026-11-29\n</env>\n${'gitStatus: M src/server.ts\n?? src/server.test.ts\n'.repeat(20)}`;

const TOOL_NAMES = [
  'Task',
  'Bash',
  'Glob',
  'Grep',
  'LS',
  'Read',
  'Edit',
  'MultiEdit',
  'Write',
  'WebFetch',
  'TodoWrite',
  'WebSearch',
];

export const TOOLS = TOOL_NAMES.map((name) => ({
  name,
  description: `${name}: ${'Performs this operation on the local workspace. Usage notes: the path must be absolute; results are truncated past 2000 lines; prefer the dedicated tool over shell equivalents. '.repeat(8)}`,
  input_schema: {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'The absolute path to the file' },
      pattern: { type: 'string', description: 'The pattern to search for' },
      limit: { type: 'number', description: 'The number of lines to read' },
      options: {
        type: 'array',
        items: { type: 'object', properties: { key: { type: 'string' }, value: { type: 'string' } } },
      },
    },
    required: ['file_path'],
    additionalProperties: false,
    $schema: 'http://json-schema.org/draft-07/schema#',
  },
}));
