// Timings for the gateway's hot path: `pnpm exec tsx packages/pdf/scripts/bench.ts` from the repo root.
import { randomBytes } from 'node:crypto';
import { decodeBase64Strict, inspectPdf, makePaddedTestPdf, makeTestPdf } from '../src/index';
import { loadPdf } from '../src/load';

const MiB = 1024 * 1024;

async function time(label: string, run: () => unknown, rounds = 9): Promise<void> {
  await run();
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const median = samples[Math.floor(samples.length / 2)] ?? Number.NaN;
  console.log(`${label.padEnd(64)} median ${median.toFixed(1)} ms, min ${samples[0]?.toFixed(1)} ms`);
}

// JSON.parse gives the kind of string the gateway holds after reading a request body.
const base64 = (
  JSON.parse(JSON.stringify({ data: randomBytes(30 * MiB).toString('base64') })) as { data: string }
).data;
await time(`decodeBase64Strict, ${(base64.length / MiB).toFixed(0)} MiB string`, () =>
  decodeBase64Strict(base64),
);
await time('  Buffer.from(data, "base64") alone, for comparison', () => Buffer.from(base64, 'base64'));

const cases = [
  {
    label: '10 MiB, 100 pages, classic xref',
    pdf: await makePaddedTestPdf({ pages: 100, targetBytes: 10 * MiB, useObjectStreams: false }),
  },
  {
    label: '10 MiB, 100 pages, object streams',
    pdf: await makePaddedTestPdf({ pages: 100, targetBytes: 10 * MiB }),
  },
  {
    label: '30 MiB, 100 pages, classic xref',
    pdf: await makePaddedTestPdf({ pages: 100, targetBytes: 30 * MiB, useObjectStreams: false }),
  },
  {
    label: '30 MiB, 100 pages, object streams',
    pdf: await makePaddedTestPdf({ pages: 100, targetBytes: 30 * MiB }),
  },
  { label: '0.6 MiB, 3000 text pages, object streams', pdf: await makeTestPdf({ pages: 3000 }) },
];
for (const { label, pdf } of cases) {
  if (inspectPdf(pdf).pages === null) throw new Error(`no page count for ${label}`);
  await time(`inspectPdf ${label}`, () => inspectPdf(pdf));
  await time('  full pdf-lib parse, for comparison', async () => (await loadPdf(pdf)).getPageCount(), 3);
}
