// Makes the compiled CLI entry executable, so `npx awake-bundle` runs it directly.
import { chmodSync, existsSync } from 'node:fs';
const entry = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(entry)) chmodSync(entry, 0o755);
