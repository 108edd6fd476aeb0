import { afterAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayChild as GatewayProcess } from './gateway-child';

let gw: GatewayProcess | undefined;
afterAll(() => gw?.remove());

/** Resolves with stdout once it holds `text` (the message's last line says the start is done). */
function printed(p: GatewayProcess, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => p.stdout().includes(text) && resolve(p.stdout());
    p.proc.stdout!.on('data', check);
    check();
    p.exited.then((code) => reject(new Error(`exited ${code} before printing: ${p.stderr()}`)));
  });
}

describe('`keygate serve` as a person starts it', () => {
  it('prints the dashboard URL and the next step on stdout; GET / leads to the dashboard', async () => {
    gw = await startGatewayProcess();
    const { url } = gw;
    const text = await printed(gw, 'Stop with Ctrl-C');
    expect(text.split('\n')[0]).toBe(`Keygate is running at ${url}`);
    expect(text).toContain(`Dashboard  ${url}/dashboard  (sign in with an admin key, or with `);
    expect(text).toContain(`  API docs   ${url}/docs`);
    expect(text).toContain('pnpm keygate account create');
    // Nothing but the message on stdout; the JSON logs stay on stderr.
    expect(text.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);

    const root = await fetch(`${url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard');
    expect((await fetch(`${url}/`, { method: 'HEAD', redirect: 'manual' })).status).toBe(302);
    // Followed as a browser does: the dashboard's sign-in page.
    const followed = await fetch(`${url}/`);
    expect(followed.status).toBe(200);
    expect(new URL(followed.url).pathname).toBe('/dashboard/sign-in');
    expect(await followed.text()).toContain('Key or operator token');

    gw.proc.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
  }, 180_000);
});
