import { startFloor } from '../floor';
import { serveArm } from '../lib/child';

await serveArm(async () => {
  const floor = await startFloor(process.env.BENCH_UPSTREAM!);
  return { info: { url: floor.url }, close: () => floor.close() };
});
