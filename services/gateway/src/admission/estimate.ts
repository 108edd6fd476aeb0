import type { CallRecord } from '../lib/call-record';
import { usageFigures } from '../usage/usage';
import type { CallSize } from './ceiling';

/** What admission expects a call to use, before it runs; it settles at what it really used. */
export interface Estimate {
  /** Input the provider counts toward input tokens per minute: uncached input and cache writes. */
  inputTokens: number;
  /** Input expected to be read from the prompt cache (free for rate limits, at the cache-read price). */
  cachedTokens: number;
  outputTokens: number;
}

/**
 * Body bytes per prompt token before a key's own calls say better. Measured: Claude Code
 * 2.1.330's captured first call (packages/emulator/test/fixtures, 49,206 bytes of JSON with 12
 * tool schemas) counts 12,067 tokens by the emulator's rule, 4.08 bytes a token; 3.5 leaves room
 * for code and non-English text, which tokenize denser. After a key's first call on a model, the
 * ratio is that call's own (its body's bytes over the input tokens the provider counted).
 */
export const BYTES_PER_TOKEN = 3.5;
/**
 * Output expected of a key's first call on a model: a typical Claude Code turn (a tool call or
 * a short answer) is well under it. Later calls expect the most the key's last calls produced.
 */
export const FIRST_OUTPUT_TOKENS = 4_096;
// "Each page typically uses 1,500-3,000 tokens": https://docs.claude.com/en/docs/build-with-claude/pdf-support (read 2026-11-25).
const PDF_PAGE_TOKENS = 3_000;
const OUTPUTS_KEPT = 8;
const PREFIXES_KEPT = 8;
const MAX_ENTRIES = 100_000;

interface Seen {
  bytesPerToken: number;
  /** The last calls' cache reads and writes: each the prefix its session's next call can read. */
  prefixes: number[];
  outputs: number[];
}

/**
 * A key's recent calls per model, in this process: what the next call is expected to use. The
 * cached prefix comes from the key's last calls' usage (Claude Code reads what its previous turn
 * read and wrote): the largest of their prefixes that fits in this call, since one key carries a
 * main session and its subagents, whose prefixes differ by tens of times (the last call's alone
 * took a subagent's small prefix for the main session's next call, and priced it all as new
 * input); the output from the most the last calls produced, bounded by `max_tokens`. A key's
 * first call on a model reads nothing from the cache (another key's prefix is another session's),
 * and goes by the model's last call of any key in this process for its ratio and output, or by
 * the constants above when there is none.
 */
export class CallEstimates {
  readonly #seen = new Map<string, Seen>();
  /** Calls estimated and not yet recorded: their body's bytes, to learn the key's ratio. */
  readonly #bytes = new Map<string, number>();

  estimate(keyId: string, callId: string, s: CallSize): Estimate {
    const own = this.#seen.get(`${keyId} ${s.model}`);
    const seen = own ?? this.#seen.get(`* ${s.model}`);
    if (this.#bytes.size >= MAX_ENTRIES) this.#bytes.clear();
    this.#bytes.set(callId, s.inputBytes);
    const total =
      Math.ceil(s.inputBytes / (seen?.bytesPerToken ?? BYTES_PER_TOKEN)) + s.pdfPages * PDF_PAGE_TOKENS;
    let cachedTokens = 0;
    for (const p of own?.prefixes ?? []) if (p <= total && p > cachedTokens) cachedTokens = p;
    const output = seen ? Math.max(...seen.outputs) : FIRST_OUTPUT_TOKENS;
    return {
      inputTokens: total - cachedTokens,
      cachedTokens,
      outputTokens: Math.max(1, Math.min(output, s.maxTokens)),
    };
  }

  /** Learns from a finished call of a key this process estimated for. */
  observe(r: CallRecord): void {
    const bytes = this.#bytes.size > 0 ? this.#bytes.get(r.id) : undefined;
    if (bytes === undefined) return;
    this.#bytes.delete(r.id);
    if (!r.usage || !r.keyId || !r.model || r.status !== 200) return;
    const u = usageFigures(r.usage);
    const input = u.inputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens;
    if (input <= 0) return;
    const bytesPerToken = Math.min(16, Math.max(1, bytes / input));
    const prefix = u.cacheReadInputTokens + u.cacheCreationInputTokens;
    this.#remember(`${r.keyId} ${r.model}`, bytesPerToken, prefix, u.outputTokens);
    this.#remember(`* ${r.model}`, bytesPerToken, 0, u.outputTokens);
  }

  #remember(id: string, bytesPerToken: number, prefix: number, output: number): void {
    const seen = this.#seen.get(id);
    const outputs = [...(seen?.outputs ?? []), output].slice(-OUTPUTS_KEPT);
    const prefixes = [...(seen?.prefixes ?? []), prefix].slice(-PREFIXES_KEPT);
    if (!seen && this.#seen.size >= MAX_ENTRIES) this.#seen.delete(this.#seen.keys().next().value!);
    this.#seen.set(id, { bytesPerToken, prefixes, outputs });
  }
}
