import { startEmulator } from '@keygate/emulator';
import { serveArm } from '../lib/child';

await serveArm(async () => {
  const emulator = await startEmulator({
    port: 0,
    apiKey: process.env.BENCH_PROVIDER_KEY!,
    ledgerLimit: 1_000,
  });
  return { info: { url: emulator.url }, close: () => emulator.close() };
});
