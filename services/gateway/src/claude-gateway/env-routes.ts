import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { operation } from '../lib/operation';
import type { ClaudeGatewayQueries } from './claude-gateway-queries';

// Where Claude Code's traffic and credential go stays the gateway's to say (its sign-in sets them).
const RESERVED = new Set(['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']);

export const ClaudeCodeEnv = z.strictObject({
  env: z
    .record(
      z
        .string()
        .regex(
          /^[A-Za-z_][A-Za-z0-9_]{0,127}$/,
          'names are letters, digits and _, not starting with a digit',
        ),
      z.string().max(4096),
    )
    .refine((e) => Object.keys(e).length <= 100, 'at most 100 variables')
    .refine(
      (e) => !Object.keys(e).some((k) => RESERVED.has(k)),
      `${[...RESERVED].join(', ')} are set by the gateway sign-in itself`,
    ),
});

/**
 * The environment an admin pushes to members' Claude Code through the gateway sign-in's managed
 * settings (`{base}/managed/settings`), on top of the telemetry variables Keygate sets there.
 */
export function claudeCodeEnvRoutes(deps: {
  store: { claudeGateway: ClaudeGatewayQueries };
}): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Claude Code sign-in';
  const json = (env: Record<string, string>) => ({ type: 'claude_code_env' as const, env });
  app.get(
    '/claude_code_env',
    operation({ tag, summary: "The environment pushed to members' Claude Code through the gateway sign-in" }),
    async (c) => c.json(json(await deps.store.claudeGateway.env(c.var.scope.accountId))),
  );
  app.post(
    '/claude_code_env',
    operation({
      tag,
      summary: "Replace the environment pushed to members' Claude Code (an empty object removes it)",
      body: ClaudeCodeEnv,
    }),
    async (c) => {
      const { env } = c.req.valid('json');
      await deps.store.claudeGateway.setEnv(c.var.scope.accountId, env);
      return c.json(json(env));
    },
  );
  return app;
}
