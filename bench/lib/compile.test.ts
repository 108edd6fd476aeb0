import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileArm } from './compile';

const run = promisify(execFile);
const FIXTURE = fileURLToPath(new URL('./fixtures/compile-arm.ts', import.meta.url));
const GATEWAY_BUILD = fileURLToPath(new URL('../../services/gateway/dist/cli/index.js', import.meta.url));

describe('compileArm: each arm as built JavaScript under plain node', () => {
  it('keeps a bundled file its own address, npm packages where installed, and the gateway as its build', async () => {
    const out = await compileArm('bench/lib/fixtures/compile-arm.ts');
    expect(out).toMatch(/bench\/\.build\/compile-arm-[0-9a-f]{8}\.mjs$/);
    // Plain node, no loader: the bundle runs as the arms do.
    const { stdout } = await run(process.execPath, [out], { timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({
      url: pathToFileURL(FIXTURE).href,
      here: fileURLToPath(new URL('./fixtures/', import.meta.url)),
      undici: 'function',
      gateway: 'function',
    });
    const text = readFileSync(out, 'utf8');
    // The gateway is imported from its compiled build, not bundled from its sources.
    expect(text).toContain(JSON.stringify(GATEWAY_BUILD));
    expect(text).not.toMatch(/services\/gateway\/src\//);
    // undici by the absolute path it is installed at.
    expect(text).toMatch(/from "\/[^"]*\/node_modules\/[^"]*undici[^"]*"/);
    // The same script is bundled once per process.
    expect(await compileArm('bench/lib/fixtures/compile-arm.ts')).toBe(out);
  }, 120_000);
});
