import { open, readFile, writeFile } from 'node:fs/promises';

/** Makes a new file's directory entry durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** One process per spool: a lock file holding the owner's pid; a dead owner's lock is taken over. */
export async function lock(path: string): Promise<void> {
  try {
    await writeFile(path, String(process.pid), { flag: 'wx', mode: 0o600 });
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
  if (owner && owner !== process.pid && alive(owner)) {
    throw new Error(
      `the call spool ${path.replace(/\/lock$/, '')} is in use by process ${owner}; give each gateway its own KEYGATE_SPOOL_DIR`,
    );
  }
  await writeFile(path, String(process.pid), { mode: 0o600 });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
