import { execFileSync } from 'node:child_process';

// The compiled project's global setup: the gateway's build, as `pnpm build` makes it, once per run.
export default function setup(): void {
  execFileSync('pnpm', ['--filter', '@keygate/gateway', 'run', 'build'], { stdio: 'inherit' });
}
