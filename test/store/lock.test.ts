// The embedded database's lock file: one live holder at a time; a dead holder's lock is taken over.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { acquireLock, LOCK_FILE } from '../../src/store/lock.js';
import { StoreError } from '../../src/store/errors.js';

t.test('lock, refuse, release, take over a stale lock', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const lock = acquireLock(dir);
  t.equal(readFileSync(join(dir, LOCK_FILE), 'utf8'), String(process.pid));
  t.throws(() => acquireLock(dir), StoreError);
  t.throws(() => acquireLock(dir), new RegExp(`in use by process ${process.pid}`));
  lock.release();
  lock.release();
  t.notOk(existsSync(join(dir, LOCK_FILE)));
  writeFileSync(join(dir, LOCK_FILE), '999999999');
  const taken = acquireLock(dir);
  t.equal(readFileSync(join(dir, LOCK_FILE), 'utf8'), String(process.pid));
  taken.release();
});
