#!/usr/bin/env node
// Runs src/cli.ts through tsx's loader: the package ships TypeScript source only.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli.ts', import.meta.url).href);
