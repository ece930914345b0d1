// Test harness (docs/CONTRACTS.md): a real control plane on port 0, on PGlite or on a fresh PostgreSQL database.
// PGlite: one template data directory per run (initialised and migrated once, shared by every test file
// through a file in the temp dir), restored per server in under a second. PostgreSQL: a throwaway database
// (./temp-database.ts), dropped on close.
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, type Settings } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { openStore, type Sql, type Store } from '../../src/store/db.js';
import { migrate, migrationFiles, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { bootstrap, createWorkspace as createWorkspaceRows } from '../../src/store/workspaces.js';
import { createContext, type AppContext } from '../../src/api/context.js';
import { buildApp } from '../../src/api/app.js';
import type { ApiApp } from '../../src/api/types.js';
import { createTempDatabase, POSTGRES_ADMIN_URL } from './temp-database.js';

export type DbKind = 'pglite' | 'postgres';
export const DB_KINDS: DbKind[] = ['pglite', 'postgres'];

/** Re-exported for the files that take it from here (bench/api.ts). */
export { POSTGRES_ADMIN_URL };

export interface TestServer {
  url: string;
  apiKey: string;
  orgId: string;
  projectId: string;
  sql: Sql;
  settings: Settings;
  ctx: AppContext;
  app: ApiApp;
  db: DbKind;
  close(): Promise<void>;
}

const TEMPLATE_DIR = join(tmpdir(), 'parley-test-pglite');
/** A template being made by another test process for longer than this is abandoned. */
const TEMPLATE_LOCK_STALE_MS = 180_000;
const TEMPLATE_POLL_MS = 200;

function templateKey(): string {
  const h = createHash('sha256');
  const pkg = JSON.parse(
    readFileSync(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url), 'utf8'),
  );
  h.update(String(pkg.version));
  for (const f of migrationFiles()) h.update(f).update(readFileSync(join(MIGRATIONS_DIR, f)));
  return h.digest('hex').slice(0, 16);
}

const quiet = createLogger('silent');

/** The path of the migrated PGlite template of the current migrations, made once for all test processes. */
export async function pgliteTemplate(): Promise<string> {
  mkdirSync(TEMPLATE_DIR, { recursive: true });
  const key = templateKey();
  const path = join(TEMPLATE_DIR, `${key}.tgz`);
  const lock = `${path}.lock`;
  for (;;) {
    if (existsSync(path)) return path;
    let fd: number;
    try {
      fd = openSync(lock, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > TEMPLATE_LOCK_STALE_MS) unlinkSync(lock);
      } catch {
        // the maker finished (or another waiter removed the stale lock) meanwhile: look again
      }
      await new Promise((r) => setTimeout(r, TEMPLATE_POLL_MS));
      continue;
    }
    closeSync(fd);
    try {
      const store = await openStore(loadSettings({}), quiet, { pgliteInMemory: true });
      try {
        await migrate(store.sql, quiet);
        const tmp = `${path}.${process.pid}.tmp`;
        await store.dump(tmp);
        renameSync(tmp, path);
      } finally {
        await store.close();
      }
    } finally {
      unlinkSync(lock);
    }
  }
}

export interface StartOptions {
  db: DbKind;
  env?: Record<string, string>;
}

export async function startTestServer(opts: StartOptions): Promise<TestServer> {
  // Each server has its own data directory (voice samples, recordings), removed on close.
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-test-data-'));
  const env: Record<string, string> = {
    PARLEY_LOG_LEVEL: 'silent',
    PARLEY_DATA_DIR: dataDir,
    ...opts.env,
    PARLEY_HTTP_PORT: '0',
  };
  let dropDatabase: (() => Promise<void>) | null = null;
  let store: Store;
  if (opts.db === 'postgres') {
    const db = await createTempDatabase();
    env.DATABASE_URL = db.url;
    dropDatabase = db.drop;
  } else {
    delete env.DATABASE_URL;
  }
  const settings = loadSettings(env);
  const log = createLogger(settings.PARLEY_LOG_LEVEL);
  try {
    store =
      opts.db === 'pglite'
        ? await openStore(settings, log, { pgliteLoadFrom: await pgliteTemplate() })
        : await openStore(settings, log);
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase?.();
    throw err;
  }
  let app: ApiApp | null = null;
  const close = async () => {
    try {
      await app?.close();
      await store.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      await dropDatabase?.();
    }
  };
  try {
    await migrate(store.sql, log);
    const first = await bootstrap(store.sql, settings.PARLEY_BOOTSTRAP_API_KEY);
    if (!first) throw new Error('a test database must start empty');
    let url = '';
    const ctx = await createContext(settings, store, log, () => url);
    app = buildApp(ctx);
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    return {
      url,
      apiKey: first.apiKey,
      orgId: first.orgId,
      projectId: first.projectId,
      sql: store.sql,
      settings,
      ctx,
      app,
      db: opts.db,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Another workspace beside the bootstrap one, for isolation tests. */
export async function createWorkspace(
  sql: Sql,
  name: string,
): Promise<{ orgId: string; projectId: string; apiKey: string }> {
  const w = await createWorkspaceRows(sql, name);
  return { orgId: w.orgId, projectId: w.projectId, apiKey: w.apiKey };
}

export interface RequestOptions {
  /** Bearer secret; defaults to the server's bootstrap key; null sends no Authorization header. */
  key?: string | null;
  headers?: Record<string, string>;
}
export interface ApiResponse {
  status: number;

  body: any;
  headers: Headers;
}

/** A tiny HTTP client of a test server. */
export function api(server: { url: string; apiKey: string }) {
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    opts: RequestOptions = {},
  ): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? server.apiKey : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(server.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const isJson = (res.headers.get('content-type') ?? '').includes('json');
    return { status: res.status, body: isJson && text ? JSON.parse(text) : text, headers: res.headers };
  };
  return {
    get: (path: string, body?: undefined, opts?: RequestOptions) => call('GET', path, body, opts),
    post: (path: string, body?: unknown, opts?: RequestOptions) => call('POST', path, body, opts),
    put: (path: string, body?: unknown, opts?: RequestOptions) => call('PUT', path, body, opts),
    patch: (path: string, body?: unknown, opts?: RequestOptions) => call('PATCH', path, body, opts),
    delete: (path: string, body?: unknown, opts?: RequestOptions) => call('DELETE', path, body, opts),
  };
}
export type ApiClient = ReturnType<typeof api>;

/**
 * The environment for a child process that runs Parley as a user would (`npm start`, `npm run admin`): this
 * process's, without tap's instrumentation (NODE_OPTIONS with tap's loader, TAP_* and _TAPJS_* variables).
 * tap puts its NODE_OPTIONS back into every child it sees spawned, so start the child through
 * `USER_NODE` (`env -u NODE_OPTIONS node`) as well.
 */
export const USER_NODE = ['env', '-u', 'NODE_OPTIONS', process.execPath] as const;

export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k === 'NODE_OPTIONS' || k.startsWith('TAP') || k.startsWith('_TAPJS')) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}
