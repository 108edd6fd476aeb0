import type { CloudEmulator } from '@keygate/emulator';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { api, startStack, type Stack } from '../harness';

/**
 * A gateway whose seeded account has no provider key, only the upstreams each test adds (and
 * removes after it), and the cloud emulators the tests started, closed at the end.
 */
export function upstreamSuite() {
  const suite = { stack: undefined as unknown as Stack, clouds: [] as CloudEmulator[] };
  const op = (path: string, body?: unknown, method?: string) =>
    api(suite.stack.gateway.url, `/operator/v1/accounts/${suite.stack.account.id}${path}`, {
      bearer: suite.stack.config.operatorToken!,
      ...(body !== undefined ? { body } : {}),
      ...(method ? { method } : {}),
    });
  beforeAll(async () => {
    suite.stack = await startStack({ KEYGATE_EGRESS_ALLOW: '127.0.0.1' });
    await suite.stack.gateway.store.db
      .sql`update accounts set provider_key_sealed = null where id = ${suite.stack.account.id}`;
  }, 60_000);
  afterAll(async () => {
    for (const c of suite.clouds) await c.close();
    await suite.stack?.close();
  });
  afterEach(async () => {
    const listed = await op('/upstreams');
    for (const u of listed.body.data) await op(`/upstreams/${u.id}`, undefined, 'DELETE');
  });
  return { suite, op };
}
