import { EXIT } from './backend';
import { str, type Command, type Values } from './command';
import { printable } from './output';

const USAGE = `Usage: keygate statusline [--url GATEWAY_URL] [--key KEY] [--timeout-ms 1500]

Prints one line for Claude Code's status line: your spend this period against your tightest
Keygate spend limit, such as "$12.40 of $20.00 monthly (62%) · resets Dec 1". Claude Code runs
it as its statusLine command (it sends session JSON on stdin, which this ignores). It never
fails and never hangs: with no answer within the timeout it prints a short fallback.

  --url         the gateway (default: ANTHROPIC_BASE_URL, as Claude Code's settings set it)
  --key         your member token or app key (default: KEYGATE_KEY, else ANTHROPIC_AUTH_TOKEN,
                else ANTHROPIC_API_KEY)
  --timeout-ms  how long to wait for the gateway (default 1500)`;

const FALLBACK = 'Keygate: spend unavailable';

interface LimitJson {
  period: string;
  /** `api_key_cap`: the key's own monthly spend cap rather than a spend limit. */
  source?: string;
  amount: string;
  period_to_date_spend: string;
  percent: number;
  resets_at: string;
}

const dollars = (cents: string) => `$${(Number(cents) / 100).toFixed(2)}`;
const day = (iso: string) =>
  new Date(iso).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });

/** The status line for a spend status answer: the tightest limit first, as the gateway sorts them. */
export function statusLine(body: { limits?: LimitJson[] }): string {
  const l = body.limits?.[0];
  if (!l) return 'Keygate: no spend limit';
  const pct = Math.floor(l.percent);
  const what = l.source === 'api_key_cap' ? `${l.period} key cap` : l.period;
  return `${dollars(l.period_to_date_spend)} of ${dollars(l.amount)} ${what} (${pct}%) · resets ${day(l.resets_at)}`;
}

async function fetchLine(base: string, key: string, timeoutMs: number): Promise<string> {
  try {
    const res = await fetch(`${base.replace(/\/+$/, '')}/keygate/v1/spend`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status === 401) return 'Keygate: sign in again';
    if (res.status !== 200) return FALLBACK;
    return statusLine((await res.json()) as { limits?: LimitJson[] });
  } catch {
    return FALLBACK;
  }
}

async function run(values: Values): Promise<number> {
  const env = process.env;
  const base = str(values.url) ?? env.ANTHROPIC_BASE_URL;
  const key = str(values.key) ?? env.KEYGATE_KEY ?? env.ANTHROPIC_AUTH_TOKEN ?? env.ANTHROPIC_API_KEY;
  const timeout = Number(str(values['timeout-ms']) ?? 1500);
  const line =
    !base || !key
      ? `Keygate: set ${base ? 'a key' : 'ANTHROPIC_BASE_URL'}`
      : await fetchLine(base, key, Number.isFinite(timeout) && timeout > 0 ? timeout : 1500);
  // The gateway's words are printed with controls escaped: a status line is one plain line.
  process.stdout.write(`${printable(line)}\n`);
  return EXIT.ok;
}

export const statuslineCommand: Command = {
  summary: "Print your spend against your spend limit, one line, for Claude Code's statusLine",
  usage: USAGE,
  options: { url: { type: 'string' }, key: { type: 'string' }, 'timeout-ms': { type: 'string' } },
  run,
};
