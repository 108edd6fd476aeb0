import type { HttpBindings } from '@hono/node-server';
import type { Principal } from './auth/resolver';
import type { Logger } from './lib/logger';

/** The typed Hono environment: Node bindings plus what middleware resolves. */
export interface AppEnv {
  Bindings: HttpBindings;
  Variables: {
    requestId: string;
    /** The app's logger with this request's id on every line. */
    logger: Logger;
    principal: Principal;
    /** performance.now() when the request came in (what keygate-overhead-ms counts from). */
    startedAt: number;
  };
}
