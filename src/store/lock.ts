// The embedded database belongs to one process at a time: a lock file in the data directory holds its pid,
// so the admin command refuses a database that a running server holds (docs/ARCHITECTURE.md, "Process shape").
import { openSync, writeSync, closeSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { StoreError } from './errors.js';

export const LOCK_FILE = 'parley.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock of `dataDir` for this process; throws StoreError when a live process holds it. */
export function acquireLock(dataDir: string): { release(): void } {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          unlinkSync(path);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) {
        throw new StoreError(`the embedded database in ${dataDir} is in use by process ${holder} (stop it first)`);
      }
      // A stale lock from a process that died: take it over.
      unlinkSync(path);
    }
  }
  throw new StoreError(`cannot take the lock ${path}`);
}
