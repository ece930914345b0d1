// `npm start` as a user runs it: start-up on PostgreSQL with a bootstrap key, the printed key on an empty
// embedded database, clean shutdown on SIGTERM, and a bad setting stopping start-up with its name.
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startMain } from './helpers/main-process.js';
import { createTempDatabase } from './helpers/temp-database.js';

// Three real start-ups (one initialises a fresh embedded database): slow on a loaded machine.
t.setTimeout(600_000);

t.test('starts on PostgreSQL with PARLEY_BOOTSTRAP_API_KEY, serves it, stops on SIGTERM', async (t) => {
  const db = await createTempDatabase('parley_test_main');
  t.teardown(db.drop);
  const key = 'bootstrap-key-for-tests-0123456789';
  const main = startMain({ DATABASE_URL: db.url, PARLEY_BOOTSTRAP_API_KEY: key });
  const [, base] = await main.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"control plane listening"/);
  const res = await fetch(`${base}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(res.status, 200);
  t.equal(((await res.json()) as { projects: { name: string }[] }).projects[0].name, 'main');
  t.notMatch(main.output(), /shown once/, 'a given bootstrap key is not printed');
  main.kill('SIGTERM');
  t.equal(await main.exited, 0, 'clean exit', { output: main.output().slice(-1500) });
});

t.test('an empty embedded database: prints a working key once; the lock is released at exit', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-main-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const main = startMain({ PARLEY_DATA_DIR: dataDir });
  const [, key] = await main.waitFor(/Parley API key \(shown once, keep it\): (pk_\S+)/);
  const [, base] = await main.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"control plane listening"/);
  t.ok(existsSync(join(dataDir, 'parley.lock')), 'the running server holds the lock');
  const res = await fetch(`${base}/v1/projects`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(res.status, 200);
  main.kill('SIGINT');
  t.equal(await main.exited, 0);
  t.notOk(existsSync(join(dataDir, 'parley.lock')));

  const again = startMain({ PARLEY_DATA_DIR: dataDir });
  await again.waitFor(/control plane listening/);
  t.notMatch(again.output(), /shown once/, 'the key is printed only on the first start');
  again.kill('SIGTERM');
  t.equal(await again.exited, 0);
});

t.test('a bad setting stops start-up naming it', async (t) => {
  const main = startMain({ PARLEY_HTTP_PORT: 'eighty', DATABASE_URL: 'postgres://127.0.0.1:1/none' });
  t.equal(await main.exited, 1);
  t.match(main.output(), /PARLEY_HTTP_PORT/);
  const proxies = startMain({ PARLEY_TRUSTED_PROXIES: '10.0.0.0/99', DATABASE_URL: 'postgres://127.0.0.1:1/none' });
  t.equal(await proxies.exited, 1);
  t.match(proxies.output(), /PARLEY_TRUSTED_PROXIES/);
  const db = startMain({ DATABASE_URL: 'mysql://x' });
  t.equal(await db.exited, 1);
  t.match(db.output(), /DATABASE_URL: must be a postgres/);
});
