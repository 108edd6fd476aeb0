import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { waitFor } from './wait';

/**
 * An interactive program in a pseudo-terminal (a tmux session on a private server of its own),
 * driven as a person would: keys in, the screen read back. Waits are on screen content.
 */
export class Terminal {
  readonly #socket = `kg-${randomUUID().slice(0, 8)}`;

  private constructor() {}

  /** Starts `command` (argv) in `cwd` with exactly `env`, on a 200×50 screen. */
  static start(command: string[], cwd: string, env: Record<string, string>): Terminal {
    const t = new Terminal();
    const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    // The program's end stays on the screen ("[exited N]") until close(), for the test's message.
    const keep = '"$0" "$@"; echo "[exited $?]"; exec sleep 86400';
    t.#tmux(
      'new-session',
      '-d',
      '-s',
      'main',
      '-x',
      '200',
      '-y',
      '50',
      '-c',
      cwd,
      'env',
      '-i',
      ...vars,
      'sh',
      '-c',
      keep,
      ...command,
    );
    return t;
  }

  #tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.#socket, ...args], { encoding: 'utf8' });
  }

  /** What the screen shows now, lines joined (wrapped lines rejoined). */
  screen(): string {
    try {
      return this.#tmux('capture-pane', '-p', '-J', '-t', 'main');
    } catch {
      return '';
    }
  }

  /** Keys as tmux names them (`Enter`, `Up`, `Escape`), or text typed literally with `literal`. */
  keys(...keys: string[]): void {
    this.#tmux('send-keys', '-t', 'main', ...keys);
  }

  type(text: string): void {
    this.#tmux('send-keys', '-t', 'main', '-l', text);
  }

  /** Waits until the screen matches, and returns the screen. */
  async waitFor(pattern: RegExp, timeout = 30_000): Promise<string> {
    return waitFor(() => (pattern.test(this.screen()) ? this.screen() : null), {
      timeout,
      interval: 100,
      what: `the screen to show ${pattern} (it shows:\n${this.screen()})`,
    }).catch(() => {
      throw new Error(`the screen never showed ${pattern}; it shows:\n${this.screen()}`);
    });
  }

  /**
   * Ends the program at once (SIGKILL, as a crash or a closed laptop would: no exit handlers run),
   * leaving "[exited]" on the screen. Only the pane's own child is signalled, by its process id.
   */
  crash(): void {
    const shell = this.#tmux('list-panes', '-t', 'main', '-F', '#{pane_pid}').trim();
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', shell], { encoding: 'utf8' });
    for (const pid of children
      .split('\n')
      .map((p) => Number(p.trim()))
      .filter((p) => p > 0))
      process.kill(pid, 'SIGKILL');
  }

  /** Ends the program and this terminal's tmux server (only this one: its own socket). */
  close(): void {
    try {
      this.#tmux('kill-server');
    } catch {}
    // tmux leaves its socket behind.
    rmSync(`${process.env.TMUX_TMPDIR ?? '/tmp'}/tmux-${process.getuid?.() ?? 0}/${this.#socket}`, {
      force: true,
    });
  }
}
