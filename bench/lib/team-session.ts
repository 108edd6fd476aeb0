import { CODE, ENVIRONMENT, SYSTEM_PROMPT, TOOLS } from './claude-code-body';

/** A small seeded generator (mulberry32): the same seed gives the same team, sessions and fan-outs. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The twelve tools with their descriptions halved, so a session's first call (tools, system
 * blocks, one question) is about 20 KB, as Claude Code's is at the start of a session.
 */
const SESSION_TOOLS = TOOLS.map((t) => ({ ...t, description: t.description.slice(0, 700) }));

export interface LaneOptions {
  model: string;
  maxTokens: number;
  /** Grows a call's body by this factor over the previous one (1.11: about 90% of it is the cached prefix). */
  growth: number;
  /** The size at which the session ends; the next call starts a new one. */
  finalBytes: number;
  /** Tells this lane's prefix apart from every other lane's (member, lane, run). */
  tag: string;
}

/**
 * One conversation of a Claude Code session (the main agent or one subagent): each call is the
 * previous call's body plus one tool_use / tool_result turn, so the prefix up to the previous
 * call's last message is what the provider has cached. Breakpoints as Claude Code sets them: the
 * last two system blocks, and the last two user turns (the previous call's end, read; this one's, written).
 * Messages are kept serialized, so a 600 KB body costs a join, not a JSON.stringify of the whole.
 */
export class Lane {
  readonly #o: LaneOptions;
  readonly #head: string;
  #messages: string[] = [];
  /** The last two user turns' JSON with and without cache_control. */
  #lastUsers: { plain: string; marked: string }[] = [];
  #session = 0;
  #turn = 0;
  #bytes = 0;

  constructor(o: LaneOptions) {
    this.#o = o;
    const head = JSON.stringify({
      model: o.model,
      max_tokens: o.maxTokens,
      stream: true,
      system: [
        { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
        { type: 'text', text: SYSTEM_PROMPT, cache_control: { type: 'ephemeral' } },
        { type: 'text', text: ENVIRONMENT, cache_control: { type: 'ephemeral' } },
      ],
      tools: SESSION_TOOLS,
    });
    this.#head = head.slice(0, -1);
    this.#start();
  }

  /** Sessions begun so far (the first is 1). */
  get session(): number {
    return this.#session;
  }

  /** The next call's body: a new turn appended, or a new session when the last one reached its size. */
  next(): string {
    if (this.#turn > 0) {
      if (this.#bytes >= this.#o.finalBytes) this.#start();
      else this.#grow();
    }
    this.#turn++;
    const body = this.#body();
    this.#bytes = Buffer.byteLength(body);
    return body;
  }

  #start(): void {
    this.#session++;
    this.#turn = 0;
    this.#messages = [];
    this.#lastUsers = [];
    const text = `[${this.#o.tag} session ${this.#session}] Fix the failing test in src/server.ts and run the suite.`;
    this.#pushUser({ role: 'user', content: [{ type: 'text', text }] });
  }

  #grow(): void {
    const target = Math.ceil(this.#bytes * this.#o.growth);
    const id = `toolu_01${this.#o.tag.replace(/\W/g, '')}${this.#session}x${this.#turn}`;
    const tool = SESSION_TOOLS[this.#turn % SESSION_TOOLS.length]!.name;
    this.#messages.push(
      JSON.stringify({
        role: 'assistant',
        content: [
          { type: 'text', text: `Let me look at step ${this.#turn} with ${tool}.` },
          { type: 'tool_use', id, name: tool, input: { file_path: `/home/dev/app/src/m${this.#turn}.ts` } },
        ],
      }),
    );
    const room = Math.max(200, target - this.#bytes - this.#messages.at(-1)!.length - 120);
    this.#pushUser({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: toolOutput(this.#turn, room) }],
    });
  }

  #pushUser(message: { role: string; content: Record<string, unknown>[] }): void {
    const plain = JSON.stringify(message);
    const last = message.content.at(-1)!;
    last.cache_control = { type: 'ephemeral' };
    const marked = JSON.stringify(message);
    this.#messages.push(plain);
    this.#lastUsers = [...this.#lastUsers.slice(-1), { plain, marked }];
  }

  #body(): string {
    // The last two user turns carry the breakpoints (at most four in all, with the two system ones).
    const n = this.#messages.length;
    const parts = this.#messages.slice();
    const users = this.#lastUsers;
    if (users.length === 2) parts[n - 3] = users[0]!.marked;
    parts[n - 1] = users.at(-1)!.marked;
    return `${this.#head},"messages":[${parts.join(',')}]}`;
  }
}

/** A Read or Bash tool's output of about `bytes` characters (`cat -n` lines of code and test output). */
export function toolOutput(turn: number, bytes: number): string {
  const lines: string[] = [];
  let n = 0;
  for (let i = 1; n < bytes; i++) {
    const line = `${String(i).padStart(6, ' ')}\t${CODE[(turn * 7 + i) % CODE.length]!}`;
    lines.push(line);
    n += line.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

/** The factor a session grows by per call to go from `firstBytes` to `finalBytes` in `calls` calls. */
export function growthFor(firstBytes: number, finalBytes: number, calls: number): number {
  return (finalBytes / firstBytes) ** (1 / Math.max(1, calls - 1));
}
