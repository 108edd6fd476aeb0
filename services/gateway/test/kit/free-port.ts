import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on, for a gateway the tests start (and restart) on a fixed
 * port. It is taken below Linux's ephemeral range (32768–60999): a port from that range, free
 * when checked, could become the local port of any outgoing connection the suite makes before
 * the gateway binds it ("port … is already in use" failed a CI run so).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free loopback port between 20000 and 32000');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
