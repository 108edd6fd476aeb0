import { createAccount, createKey } from '../src/accounts/service';
import { loadConfig } from '../src/config';
import { openRuntime } from '../src/runtime';

/** A fresh account and live app key in the database that `env` names (migrations applied). */
export async function provision(env: Record<string, string>): Promise<string> {
  const config = loadConfig(env);
  const rt = await openRuntime(config);
  try {
    const deps = { store: rt.store, box: rt.box, clock: Date.now };
    const { account } = await createAccount(deps, {
      name: 'Durability',
      plan: 'team',
      providerKey: env.PROVIDER_KEY!,
    });
    const { secret } = await createKey(deps, {
      accountId: account.id,
      kind: 'live',
      memberId: null,
      app: null,
      environment: null,
      planDefaults: false,
    });
    return secret;
  } finally {
    await rt.close();
  }
}

export interface Answered {
  id: string;
  /** When the client had the whole answer (Date.now()). */
  at: number;
  status: number;
}

/**
 * Client loops calling /v1/messages until `stop()`; every answer the client got is kept with its
 * request id. Connection errors (the gateway killed) end a loop's call without an answer.
 */
export function driveLoad(url: string, key: string, concurrency: number) {
  const answered: Answered[] = [];
  let failed = 0;
  let stopped = false;
  const loop = async (n: number) => {
    for (let i = 0; !stopped; i++) {
      try {
        const res = await fetch(`${url}/v1/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'claude-sonnet-4-5',
            max_tokens: 32,
            stream: i % 4 === 0,
            messages: [{ role: 'user', content: `load ${n}.${i}` }],
          }),
          // A client gives up at some point: a call stuck past it counts as not answered, and
          // stopping the load never waits on it.
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        answered.push({
          id: res.headers.get('keygate-request-id') ?? '',
          at: Date.now(),
          status: res.status,
        });
      } catch {
        failed++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const loops = Array.from({ length: concurrency }, (_, n) => loop(n));
  return {
    answered,
    get failed() {
      return failed;
    },
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
