#!/usr/bin/env node
// The CLI is TypeScript source; tsx compiles it on load.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/keygate.ts');
