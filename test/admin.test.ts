// The admin command as a user runs it (a child process): workspaces, projects, keys, the number inventory,
// feature flags and allowlists on PostgreSQL; on the embedded database, a real run and the refusal to open a
// database a running process holds.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { api, startTestServer, USER_NODE, userEnv } from './helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
// Each admin run is a fresh Node process (tsx start-up): slow on a loaded 2-core machine.
t.setTimeout(600_000);

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function admin(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const childEnv = userEnv({ PARLEY_LOG_LEVEL: 'warn', ...env });
    if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
    const [cmd, ...pre] = USER_NODE;
    execFile(
      cmd,
      [...pre, '--import', 'tsx', 'src/admin.ts', ...args],
      { cwd: ROOT, env: childEnv },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

t.test('admin on PostgreSQL', { timeout: 500_000 }, async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const env = { DATABASE_URL: server.settings.DATABASE_URL! };

  const created = await admin(env, 'create-workspace', 'acme');
  t.equal(created.code, 0, created.stderr);
  const key = /api key \(shown once\): (pk_\S+)/.exec(created.stdout)?.[1];
  t.ok(key, 'the key is printed');
  const acme = api({ url: server.url, apiKey: key! });
  const projects = await acme.get('/v1/projects');
  t.equal(projects.status, 200);
  t.same(
    projects.body.projects.map((p: { name: string }) => p.name),
    ['main'],
  );
  t.equal((await admin(env, 'create-workspace', 'acme')).code, 2, 'names are unique');

  t.equal((await admin(env, 'create-project', 'acme', 'support')).code, 0);
  t.same(
    (await acme.get('/v1/projects')).body.projects.map((p: { name: string }) => p.name),
    ['main', 'support'],
  );
  t.equal((await admin(env, 'create-project', 'acme', 'Bad Name')).code, 2);

  const second = await admin(env, 'create-api-key', 'acme', 'ops');
  const key2 = /: (pk_\S+)/.exec(second.stdout)?.[1];
  t.equal((await acme.get('/v1/projects', undefined, { key: key2 })).status, 200);

  t.equal((await admin(env, 'add-numbers', '+14155550100', '+14155550101')).code, 0);
  const scoped = await admin(env, 'add-numbers', '--workspace', 'acme', '+14155550102', '+14155550100');
  t.match(scoped.stdout, /added 1 of 2/);
  t.equal((await admin(env, 'add-numbers', '4155550100')).code, 2, 'E.164 only');
  const rows = await server.sql<
    { number: string; org_id: string | null }[]
  >`select number, org_id from phone_number_inventory order by number`;
  t.same(
    rows.map((r) => [r.number, r.org_id !== null]),
    [
      ['+14155550100', false],
      ['+14155550101', false],
      ['+14155550102', true],
    ],
  );
  t.match((await admin(env, 'list-numbers')).stdout, /\+14155550102\torg_/);

  t.equal((await admin(env, 'set-feature', 'acme', 'responses', 'on')).code, 0);
  t.same((await acme.get('/v1/workspace')).body.workspace.features, { responses: true });
  t.equal((await admin(env, 'set-feature', 'acme', 'responses', 'unset')).code, 0);
  t.same((await acme.get('/v1/workspace')).body.workspace.features, {});

  t.equal((await admin(env, 'set-ip-allowlist', 'acme', '203.0.113.0/24')).code, 0);
  t.equal((await acme.get('/v1/projects')).status, 403, 'the allowlist set by admin is enforced');
  t.equal((await admin(env, 'set-ip-allowlist', 'acme', '300.0.0.1')).code, 2);
  t.equal((await admin(env, 'set-ip-allowlist', 'acme')).code, 0);
  t.equal((await acme.get('/v1/projects')).status, 200, 'cleared by admin');

  const listed = await admin(env, 'list-workspaces');
  t.match(listed.stdout, /org_\S+\tacme\t/);
  const unknown = await admin(env, 'frobnicate');
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown command 'frobnicate'[\s\S]*usage/);
});

t.test(
  'admin on the embedded database: a real run, then refusal while another process holds it',
  { timeout: 300_000 },
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-admin-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { PARLEY_DATA_DIR: dataDir };
    const created = await admin(env, 'create-workspace', 'embedded');
    t.equal(created.code, 0, created.stderr);
    t.notOk(existsSync(join(dataDir, 'parley.lock')), 'the lock is released on exit');
    t.match((await admin(env, 'list-workspaces')).stdout, /\tembedded\t/, 'the data persists');

    // This test process stands in for a running server holding the database.
    writeFileSync(join(dataDir, 'parley.lock'), String(process.pid));
    const refused = await admin(env, 'list-workspaces');
    t.equal(refused.code, 1);
    t.match(refused.stderr, new RegExp(`in use by process ${process.pid}`));
    // A lock left by a process that no longer exists is taken over.
    writeFileSync(join(dataDir, 'parley.lock'), '999999999');
    t.equal((await admin(env, 'list-workspaces')).code, 0);
  },
);
