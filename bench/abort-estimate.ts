/**
 * How close the gateway's estimate for a stream cut short comes to what the provider billed
 * (the emulator's ledger), for streams cut after 1, 10, 100 and 1,000 deltas, by the client
 * leaving and by the provider cutting the connection:
 *   TEST_DATABASE_URL=postgres://… pnpm exec tsx bench/abort-estimate.ts
 * The reply is one word a delta; the emulator bills one token per word.
 */
import { cutStream, type Cut } from '../services/gateway/test/cut-stream';
import { startStack } from '../services/gateway/test/harness';

const CUTS = [1, 10, 100, 1_000];
const ROUNDS = 3;

const stack = await startStack({ KEYGATE_LOG_LEVEL: 'warn' });
try {
  console.log(
    '| cut by | after deltas | deltas the client got | billed by the emulator (ledger) | reported by the provider | recorded (estimate) | estimate / ledger |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const by of ['client', 'upstream'] as const) {
    for (const after of CUTS) {
      const runs: Cut[] = [];
      for (let i = 0; i < ROUNDS; i++) runs.push(await cutStream(stack, after, by));
      const cell = (f: (r: Cut) => number, digits = 0) => {
        const xs = runs.map(f).sort((a, b) => a - b);
        const [lo, hi] = [xs[0]!.toFixed(digits), xs.at(-1)!.toFixed(digits)];
        return lo === hi ? lo : `${lo}–${hi}`;
      };
      if (runs.some((r) => !r.row.estimated))
        throw new Error(`a ${by} cut after ${after} was not recorded as estimated`);
      console.log(
        `| ${by} | ${after} | ${cell((r) => r.clientDeltas)} | ${cell((r) => r.entry.usage!.output_tokens)} | 1 | ${cell((r) => r.row.output_tokens)} | ${cell((r) => r.row.output_tokens / r.entry.usage!.output_tokens, 2)} |`,
      );
    }
  }
  console.log(`\n${ROUNDS} runs per row (ranges shown); client cuts with deltas 3 ms apart.`);
} finally {
  await stack.close();
}
