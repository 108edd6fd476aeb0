import type { HttpBindings } from '@hono/node-server';
import type { Principal } from './auth/resolver';

/** The typed Hono environment: Node bindings plus what middleware resolves. */
export interface AppEnv {
  Bindings: HttpBindings;
  Variables: {
    requestId: string;
    principal: Principal;
  };
}
