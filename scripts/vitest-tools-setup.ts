// Installs the real clients and runtimes (Claude Code, Node 24, Bun, Deno; Chromium and HAProxy
// from Debian's packages when missing) once per test run,
// before any worker starts, so two workers never install the same tool at the same time.
// @ts-expect-error plain ESM script without types
import { ensureSystemPackages, ensureTools } from './ensure-tools.mjs';

export default function setup(): void {
  ensureSystemPackages();
  ensureTools();
}
