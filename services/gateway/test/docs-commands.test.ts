import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '@keygate/emulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayChild, startGatewayProcess } from './gateway-child';
import { PROVIDER_KEY } from './harness';
import { commandsOf, type DocCommand, DocSession, docFiles, errorAnswer, ROOT } from './kit/doc-commands';
import { KEYGATE_BIN } from './kit/gateway';

/**
 * Every command in README.md and docs/ runs, as written, or names the test that runs it. Run
 * here: against one compiled gateway (`node services/gateway/bin/keygate.js serve`, a schema or
 * data dir of its own) whose live keys go to a loopback emulator; `pnpm keygate` is that
 * gateway's CLI, `http://127.0.0.1:8080` its address, and `acct_…`, `kg_test_…`, … are filled
 * from what the commands above printed, so each guide runs top to bottom as a person follows it.
 */
const DELEGATED: { command: string | RegExp; test: string; why: string }[] = [
  {
    command: /^printf %s "\$CLIENT_SECRET" \| keygate idp set /,
    test: 'services/gateway/test/idp-dashboard.test.ts',
    why: 'the secret piped to --client-secret-stdin, against a local OpenID provider (no real IdP here)',
  },
  {
    command: /^echo '\{\}' \| ANTHROPIC_BASE_URL=\S+ ANTHROPIC_AUTH_TOKEN=\S+ keygate statusline$/,
    test: 'services/gateway/test/spend-warnings.test.ts',
    why: 'the status line command run as Claude Code runs it (JSON on stdin) against a real gateway, and unreachable ones',
  },
  {
    command: /^keygate claude-code env /,
    test: 'services/gateway/test/claude-gateway-protocol.test.ts',
    why: 'the CLI command sets, shows and clears the environment pushed to Claude Code',
  },
  {
    command:
      /^export ANTHROPIC_(BASE_URL=https:\/\/keygate\.example\.com|FEDERATION_RULE_ID|ORGANIZATION_ID|IDENTITY_TOKEN_FILE)=/,
    test: 'services/gateway/test/workload-tokens.test.ts',
    why: "the provider's SDK exchanging a workload's token at Keygate (oidcFederationProvider), from these settings",
  },
  {
    command: /^keygate federation /,
    test: 'services/gateway/test/workload-tokens.test.ts',
    why: 'the federation commands through the compiled CLI, against a local issuer',
  },
  {
    command: /^curl -sS? https:\/\/keygate\.example\.com\/v1\/(organizations\/federation_rules|oauth\/token)/,
    test: 'services/gateway/test/workload-tokens.test.ts',
    why: 'rules made through the account API and tokens exchanged at /v1/oauth/token, with locally signed JWTs',
  },
  {
    command: 'npm install -g pnpm@10 && pnpm install && pnpm start',
    test: 'services/gateway/test/demo.test.ts',
    why: '`pnpm start` as a process from the repository root, beside `pnpm demo` (and embedded-start.test.ts)',
  },
  {
    command: 'npm install -g pnpm@10 && pnpm install && pnpm test',
    test: '.ci/run',
    why: 'the command that runs this suite; CI runs exactly it',
  },
  {
    command: 'pnpm demo',
    test: 'services/gateway/test/demo.test.ts',
    why: 'runs `pnpm demo` on a fresh data dir',
  },
  {
    command: /^claude( -p .*)?$/,
    test: 'services/gateway/test/real-clients-claude-code.test.ts',
    why: 'real Claude Code with ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN (or apiKeyHelper) set to the gateway',
  },
  {
    command: /^HOST=0\.0\.0\.0 .*pnpm start$/,
    test: 'services/gateway/test/embedded-start.test.ts',
    why: '`pnpm start` as a process; tests bind loopback only, never every interface',
  },
  {
    command: 'KEYGATE_BILLING=off pnpm start',
    test: 'services/gateway/test/billing-off.test.ts',
    why: 'a gateway with KEYGATE_BILLING=off: no trial end, no 402',
  },
  {
    command: /^pnpm emulator\b/,
    test: 'services/gateway/test/ctrl-c.test.ts',
    why: '`pnpm emulator` as a process (and packages/emulator/test/host.test.ts, its bin)',
  },
  {
    command: 'KEYGATE_UPSTREAM_URL=http://127.0.0.1:4010 pnpm start',
    test: 'services/gateway/test/ctrl-c.test.ts',
    why: '`pnpm start` with KEYGATE_UPSTREAM_URL at an emulator; this file runs its gateway so too',
  },
  {
    command: /^printf %s "\$IDP_CLIENT_SECRET" \| pnpm keygate idp set /,
    test: 'services/gateway/test/idp-dashboard.test.ts',
    why: '`keygate idp set` with the secret on stdin against a loopback OpenID provider (the issuer is discovered)',
  },
  {
    command: /^keygate (backup|restore) /,
    test: 'services/gateway/test/backup-restore.test.ts',
    why: 'the backup and restore round trip, on both kinds of database',
  },
  {
    command: /^DATABASE_URL=postgres:\/\/keygate@db\.acme\.test\/keygate /,
    test: 'services/gateway/test/database-url.test.ts',
    why: 'the gateway on an external PostgreSQL with its secret and operator token',
  },
];

const delegation = (c: DocCommand) =>
  DELEGATED.find((d) => (typeof d.command === 'string' ? d.command === c.text : d.command.test(c.text)));

const files = docFiles();
const all = files.flatMap(commandsOf);
const counts = { run: 0, delegated: 0 };

let emulator: Emulator;
let gateway: GatewayChild;
let session: DocSession;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
  gateway = await startGatewayProcess({
    KEYGATE_UPSTREAM_URL: emulator.url,
    KEYGATE_OPERATOR_TOKEN: 'docs-operator-token-0123456789',
  });
  session = new DocSession({
    gatewayUrl: gateway.url,
    keygate: `${process.execPath} ${KEYGATE_BIN}`,
    providerKey: PROVIDER_KEY,
  });
});

afterAll(async () => {
  await gateway?.remove();
  await emulator?.close();
});

function sh(command: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      'bash',
      ['-c', command],
      { cwd: ROOT, env, timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

describe('every command in README.md and docs/ is run, here or by the test named for it', () => {
  it('each delegation names a test file that exists and a command the docs still hold', () => {
    for (const d of DELEGATED) {
      expect(existsSync(join(ROOT, d.test)), d.test).toBe(true);
      expect(
        all.some((c) => delegation(c) === d),
        `no command in the docs matches ${d.command}`,
      ).toBe(true);
    }
  });

  it.each(files)(
    '%s: its commands run top to bottom as written',
    async (file) => {
      for (const c of all.filter((c) => c.file === file)) {
        if (delegation(c)) {
          counts.delegated++;
          continue;
        }
        const text = session.fill(c);
        counts.run++;
        if (session.exported(text)) continue;
        const run = await sh(text, { ...gateway.env, KEYGATE_LOG_LEVEL: 'warn', ...session.env });
        const where = `${c.file}:${c.line}: \`${c.text}\``;
        expect(run.code, `${where} exited ${run.code}\n${run.stderr}${run.stdout}`).toBe(0);
        expect(errorAnswer(run.stdout), `${where} answered an error`).toBeNull();
        session.read(run.stdout);
      }
    },
    300_000,
  );

  it('ran or delegated every one', () => {
    expect(counts.run + counts.delegated).toBe(all.length);
    console.info(`docs commands: ${counts.run} run, ${counts.delegated} delegated, of ${all.length}`);
  });
});
