import type { HttpBindings } from '@hono/node-server';
import type { KeyAuthVariables } from './auth/middleware';
import type { Logger } from './lib/logger';
import type { RequestBodyVariables } from './lib/request-body';

/** The typed Hono environment: Node bindings plus the variables each middleware declares. */
export interface AppEnv {
  Bindings: HttpBindings;
  Variables: KeyAuthVariables &
    RequestBodyVariables & {
      requestId: string;
      /** The app's logger with this request's id on every line. */
      logger: Logger;
      /** performance.now() when the request came in (what keygate-overhead-ms counts from). */
      startedAt: number;
    };
}
