import { parseArgs } from 'node:util';
import { startEmulator } from './emulator';
import { DEFAULT_API_KEY } from './router';
import { SCENARIOS } from './scenarios';

const USAGE = `keygate-emulator: a local stand-in for the provider's Messages API

Options:
  --port <n>          port to listen on (default 4010; 0 = any free port)
  --host <addr>       address to bind (default 127.0.0.1)
  --api-key <key>     x-api-key to expect (default $EMULATOR_API_KEY, else ${DEFAULT_API_KEY})
  --any-key           accept any non-empty x-api-key
  --accept-bearer     also accept "Authorization: Bearer <key>" (what @anthropic-ai/sdk 1.x sends)
  --scenario <names>  default scenario(s) for requests that name none
  -h, --help          show this help

Scenarios (header x-emulator-scenario): ${SCENARIOS.join(', ')}`;

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${USAGE}\n`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    // `pnpm start -- --port 4010` passes the `--` through; drop it rather than end the options there.
    args: process.argv.slice(2).filter((arg, i) => i > 0 || arg !== '--'),
    options: {
      port: { type: 'string', default: '4010' },
      host: { type: 'string', default: '127.0.0.1' },
      'api-key': { type: 'string' },
      'any-key': { type: 'boolean', default: false },
      'accept-bearer': { type: 'boolean', default: false },
      scenario: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (err) {
  fail((err as Error).message);
}

if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65_535)
  fail(`--port: expected 0-65535, got '${values.port}'`);
const apiKey = values['any-key']
  ? null
  : (values['api-key'] ?? process.env.EMULATOR_API_KEY ?? DEFAULT_API_KEY);

const emulator = await startEmulator({
  port,
  host: values.host,
  apiKey,
  acceptBearer: values['accept-bearer'],
  ...(values.scenario !== undefined && { defaultScenario: values.scenario }),
});
process.stdout.write(
  [
    `Keygate emulator listening on ${emulator.url}`,
    `  x-api-key: ${apiKey === null ? '(any non-empty key)' : apiKey}`,
    `Point the gateway at it:  KEYGATE_UPSTREAM_URL=${emulator.url}`,
    values['accept-bearer']
      ? `Or a client directly:     ANTHROPIC_BASE_URL=${emulator.url}`
      : `Or a client directly:     ANTHROPIC_BASE_URL=${emulator.url} (send x-api-key, or restart with --accept-bearer for @anthropic-ai/sdk 1.x)`,
    '',
  ].join('\n'),
);

// One Ctrl-C reaches the emulator twice under pnpm (the terminal's signal to the group, and
// pnpm's forward of it): the second must not kill it mid-close, which pnpm reports as a failure.
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void emulator.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
