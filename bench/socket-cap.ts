/**
 * What the per-address socket bound costs per connection, side by side: two HTTP servers in
 * one child process, one with `capSocketsPerAddress` and one without, each sent new
 * connections (one request each, `connection: close`) in alternating rounds. Reports the
 * server's CPU time per connection and connections per second:
 *   pnpm exec tsx bench/socket-cap.ts
 */
import { fork } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { capSocketsPerAddress } from '../services/gateway/src/lib/server-limits';
import { silentLogger } from '../services/gateway/src/lib/logger';

const ROUNDS = 6;
const ROUND_MS = 2_000;
const CONCURRENCY = 32;

if (process.argv[2] === 'server') {
  const listen = (s: Server) =>
    new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as { port: number }).port)));
  const handler = (_req: unknown, res: { end(s: string): void }) => res.end('ok');
  const plain = createServer(handler);
  const capped = createServer(handler);
  capSocketsPerAddress(capped, 10_000, silentLogger);
  const ports = { plain: await listen(plain), capped: await listen(capped) };
  process.on('message', () => {
    const u = process.cpuUsage();
    process.send!({ cpuUs: u.user + u.system });
  });
  process.send!(ports);
} else {
  const child = fork(new URL(import.meta.url).pathname, ['server'], { execArgv: process.execArgv });
  const ask = () =>
    new Promise<any>((r) => {
      child.once('message', r);
      child.send('cpu');
    });
  const ports = await new Promise<{ plain: number; capped: number }>((r) =>
    child.once('message', r as never),
  );

  const one = (port: number) =>
    new Promise<void>((resolve) => {
      const s = connect(port, '127.0.0.1', () =>
        s.write('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
      );
      s.on('data', () => {});
      s.on('error', () => resolve());
      s.on('close', () => resolve());
    });
  async function round(port: number): Promise<{ conns: number; cpuUs: number }> {
    const before = (await ask()).cpuUs;
    const until = Date.now() + ROUND_MS;
    let conns = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          await one(port);
          conns++;
        }
      }),
    );
    return { conns, cpuUs: (await ask()).cpuUs - before };
  }
  const results: Record<'plain' | 'capped', Array<{ conns: number; cpuUs: number }>> = {
    plain: [],
    capped: [],
  };
  await round(ports.plain);
  await round(ports.capped);
  for (let i = 0; i < ROUNDS; i++) {
    const order: Array<'plain' | 'capped'> = i % 2 ? ['capped', 'plain'] : ['plain', 'capped'];
    for (const v of order) results[v].push(await round(ports[v]));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`| server | connections/s (median of ${ROUNDS}) | server CPU µs per connection (median) |`);
  console.log('|---|---:|---:|');
  for (const v of ['plain', 'capped'] as const) {
    console.log(
      `| ${v} | ${Math.round(median(results[v].map((r) => r.conns / (ROUND_MS / 1000))))} | ${median(results[v].map((r) => r.cpuUs / r.conns)).toFixed(1)} |`,
    );
  }
  child.kill();
}
