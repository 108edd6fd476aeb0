// Builds and packs the packages a user installs, then lints each tarball as npm would serve it:
// publint (package.json fields against the files) and attw (types resolve for ESM and CJS
// consumers under every moduleResolution). Packing goes through pnpm, which applies publishConfig.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PACKED = ['@keygate/protocol', '@keygate/pdf', '@keygate/sdk'];

const run = (cmd, args) => execFileSync(cmd, args, { stdio: 'inherit' });

const out = mkdtempSync(join(tmpdir(), 'keygate-packages-'));
try {
  for (const name of PACKED) {
    run('pnpm', ['--filter', name, 'build']);
    run('pnpm', ['--filter', name, 'pack', '--pack-destination', out]);
  }
  for (const tarball of readdirSync(out)) {
    run('pnpm', ['exec', 'publint', 'run', '--strict', join(out, tarball)]);
    run('pnpm', ['exec', 'attw', join(out, tarball)]);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
