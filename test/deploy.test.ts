// The production image and the compose file as an operator uses them (docs/operations.md): what can be checked
// without a container runtime is checked for real (the Dockerfile's stages, user, process, health check, ports and
// copies against .dockerignore and the code; the compose file's services; that the production install has every
// package the server loads). The image itself is built only where a container runtime answers (`docker info`);
// elsewhere that one test is skipped, saying why.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { loadSettings } from '../src/config.js';
import { runtimeDependencyProblems, runtimeSpecifiers } from '../scripts/check-runtime-deps.js';

t.setTimeout(900_000);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Instruction {
  op: string;
  args: string;
  /** Index of the build stage (FROM) it belongs to. */
  stage: number;
}

/** Dockerfile instructions: comment lines dropped, continuation lines joined, grouped by stage. */
function parseDockerfile(text: string): { instructions: Instruction[]; stages: string[] } {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && current === '')) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(current + line);
    current = '';
  }
  const instructions: Instruction[] = [];
  const stages: string[] = [];
  for (const l of logical) {
    const m = /^(\w+)\s+(.*)$/s.exec(l);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    if (op === 'FROM') stages.push(m[2]!);
    instructions.push({ op, args: m[2]!.trim(), stage: stages.length - 1 });
  }
  return { instructions, stages };
}

/** The exec form (JSON array) of an instruction's arguments; null for the shell form. */
function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  const parsed: unknown = JSON.parse(args);
  return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : null;
}

/** .dockerignore patterns (Docker's rules: Go filepath.Match, anchored at the context root, `**` any depth). */
function dockerignore(text: string): (path: string) => boolean {
  const patterns = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((p) => {
      const negate = p.startsWith('!');
      const glob = posix.normalize(negate ? p.slice(1) : p).replace(/^\/+/, '');
      const re = glob
        .split('/')
        .map((seg) =>
          seg === '**'
            ? '.*'
            : seg
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\.\*\//g, '(?:.*/)?');
      // A pattern matching a folder excludes everything under it.
      return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
    });
  return (path) => {
    let ignored = false;
    for (const p of patterns) if (p.re.test(path)) ignored = !p.negate;
    return ignored;
  };
}

const dockerfile = parseDockerfile(read('Dockerfile'));
const finalStage = dockerfile.stages.length - 1;
const inFinal = (op: string) => dockerfile.instructions.filter((i) => i.op === op && i.stage === finalStage);
const defaults = loadSettings({});

t.test('.dockerignore keeps local installs, builds, data and the repository out of the context', async (t) => {
  const ignored = dockerignore(read('.dockerignore'));
  for (const path of [
    'node_modules',
    'node_modules/fastify/package.json',
    'native/build',
    'native/build/Release/parley_dsp.node',
    'data',
    'data/parley.lock',
    '.git',
    '.git/HEAD',
    'server.log',
    'src/x.log',
    '.env',
    'bench/results/sts.json',
  ]) {
    t.ok(ignored(path), `${path} is not sent to the build`);
  }
  for (const path of [
    'package.json',
    'package-lock.json',
    'native/binding.gyp',
    'native/src/addon.cc',
    'src/main.ts',
    'sip/index.ts',
  ]) {
    t.notOk(ignored(path), `${path} is sent to the build`);
  }
});

t.test('the Dockerfile: a build stage, then a slim runtime stage running node as a non-root user', async (t) => {
  t.ok(dockerfile.stages.length >= 2, `multi-stage (${dockerfile.stages.length} stages)`);
  const build = dockerfile.instructions.filter((i) => i.stage < finalStage);
  t.ok(
    build.some((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args)),
    'the build stage installs with npm ci',
  );
  t.ok(
    build.some((i) => i.op === 'RUN' && /npm prune --omit=dev|npm ci [^&]*--omit=dev/.test(i.args)),
    'and drops the dev dependencies',
  );
  t.ok(
    build.some((i) => i.op === 'RUN' && /\bg\+\+/.test(i.args)),
    'the compiler is in the build stage',
  );
  t.notOk(
    inFinal('RUN').some((i) => /\bg\+\+|build-essential/.test(i.args)),
    'and not in the runtime stage',
  );
  t.match(dockerfile.stages[finalStage], /-slim\b/, 'the runtime stage is a slim image');

  const users = inFinal('USER');
  t.equal(users.length > 0, true, 'the runtime stage sets USER');
  const user = users.at(-1)?.args ?? 'root';
  t.notOk(/^(root|0)(:|$)/.test(user), `the process runs as ${user}, not root`);

  const entrypoint = execForm(inFinal('ENTRYPOINT').at(-1)?.args ?? '[]');
  const cmd = execForm(inFinal('CMD').at(-1)?.args ?? '');
  t.ok(cmd, 'CMD is in exec form (no shell between the runtime and the process)');
  t.ok(entrypoint, 'ENTRYPOINT, if any, is in exec form');
  const argv = [...(entrypoint ?? []), ...(cmd ?? [])];
  t.match(argv[0], /(^|\/)(tini|node)$/, `PID 1 is tini or node (${argv[0]})`);
  if (/tini$/.test(argv[0] ?? '')) {
    t.ok(
      inFinal('RUN').some((i) => /\btini\b/.test(i.args)),
      'tini is installed',
    );
    t.equal(argv[1], '--', 'tini passes the rest as the command');
  }
  const nodeAt = argv.findIndex((a) => /(^|\/)node$/.test(a));
  t.ok(nodeAt >= 0, 'the command is node itself, not npm');
  const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
  t.equal(argv.slice(nodeAt).join(' '), start, `it runs what npm start runs (${start})`);
  const tsx = /--import tsx/.test(start);
  if (tsx) {
    const deps = (JSON.parse(read('package.json')) as { dependencies: Record<string, string> }).dependencies;
    t.ok(deps.tsx, 'tsx, which runs the sources, is a runtime dependency (kept by --omit=dev)');
  }
});

t.test(
  'the runtime stage has what the server loads: sources, pruned modules, the built addon, espeak-ng',
  async (t) => {
    const copies = inFinal('COPY').map((i) => i.args.split(/\s+/));
    const fromContext = copies.filter((c) => !c.some((a) => a.startsWith('--from=')));
    const fromBuild = copies.filter((c) => c.some((a) => a.startsWith('--from=')));
    const copied = (path: string) =>
      fromContext.some((c) =>
        c
          .slice(0, -1)
          .filter((a) => !a.startsWith('--'))
          .some((src) => posix.normalize(src) === path),
      );
    for (const path of ['src', 'sip', 'package.json', 'tsconfig.json'])
      t.ok(copied(path), `${path} is copied from the context`);
    t.ok(
      fromBuild.some((c) => c.includes('/app/node_modules')),
      'node_modules comes from the build stage',
    );
    // The addon's path as src/media/native/addon.ts loads it, relative to the app's root.
    const addon = /ADDON_PATH = '([^']+)'/.exec(read('src/media/native/addon.ts'))?.[1] ?? '';
    const addonFromRoot = posix.normalize(posix.join('src/media/native', addon));
    t.equal(addonFromRoot, 'native/build/Release/parley_dsp.node');
    t.ok(
      fromBuild.some((c) => c.some((a) => a.endsWith(addonFromRoot))),
      `the built addon (${addonFromRoot}) comes from the build stage`,
    );
    t.ok(
      inFinal('RUN').some((i) => /\bespeak-ng\b/.test(i.args)),
      "espeak-ng (the offline engines' speech, voice samples) is installed",
    );
    t.match(read('src/engines/local-tts.ts'), /espeak-ng/, 'the local speech still runs espeak-ng');

    // Everything copied from the context is sent to the build.
    const ignored = dockerignore(read('.dockerignore'));
    const everyCopy = dockerfile.instructions
      .filter((i) => i.op === 'COPY' && !/--from=/.test(i.args))
      .map((i) => i.args.split(/\s+/));
    for (const c of everyCopy)
      for (const src of c.slice(0, -1).filter((a) => !a.startsWith('--')))
        t.notOk(ignored(posix.normalize(src)), `${src} is not excluded by .dockerignore`);
  },
);

t.test('the Dockerfile states the ports, the data volume, the health check and the listening address', async (t) => {
  const env = Object.fromEntries(
    inFinal('ENV').flatMap((i) => [...i.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
  );
  t.equal(env.PARLEY_HOST, '0.0.0.0', 'listens on every interface of the container');
  const dataDir = env.PARLEY_DATA_DIR;
  t.ok(dataDir, 'PARLEY_DATA_DIR is set');
  const volumes = inFinal('VOLUME').flatMap((i) => execForm(i.args) ?? i.args.split(/\s+/));
  t.ok(volumes.includes(dataDir!), `the data directory ${dataDir} is a volume`);
  t.ok(
    inFinal('RUN').some((i) => new RegExp(`chown [^ ]+ ${dataDir}`).test(i.args)),
    "and owned by the process's user",
  );

  const exposed = inFinal('EXPOSE').flatMap((i) => i.args.split(/\s+/));
  const port = (name: 'PARLEY_HTTP_PORT' | 'PARLEY_WS_PORT' | 'PARLEY_SIP_PORT') => Number(env[name] ?? defaults[name]);
  t.ok(exposed.includes(`${port('PARLEY_HTTP_PORT')}/tcp`), 'the HTTP API port');
  t.ok(exposed.includes(`${port('PARLEY_WS_PORT')}/tcp`), 'the realtime port');
  t.ok(
    exposed.includes(`${port('PARLEY_SIP_PORT')}/udp`) && exposed.includes(`${port('PARLEY_SIP_PORT')}/tcp`),
    'SIP over UDP and TCP',
  );
  const rtp = `${env.PARLEY_RTP_PORT_MIN ?? defaults.PARLEY_RTP_PORT_MIN}-${env.PARLEY_RTP_PORT_MAX ?? defaults.PARLEY_RTP_PORT_MAX}/udp`;
  t.ok(exposed.includes(rtp), `the RTP range ${rtp}`);

  const health = inFinal('HEALTHCHECK').at(-1)?.args ?? '';
  t.ok(health, 'HEALTHCHECK is present');
  const probe = execForm(health.replace(/^.*?CMD\s+/s, ''));
  t.ok(probe, 'in exec form');
  t.match(probe?.join(' ') ?? '', /\/healthz/, 'it asks /healthz');
  t.match(probe?.join(' ') ?? '', /PARLEY_HTTP_PORT/, 'on the configured HTTP port');
  t.equal(probe?.[0], 'node', 'with node (the slim image has no curl)');
});

t.test('compose.yaml: Parley on PostgreSQL, started once the database is healthy, its ports and volumes', async (t) => {
  const compose = parseYaml(read('compose.yaml')) as {
    services: Record<
      string,
      {
        image?: string;
        build?: unknown;
        environment?: Record<string, string>;
        ports?: string[];
        volumes?: string[];
        healthcheck?: { test: string[] };
        depends_on?: Record<string, { condition: string }>;
        stop_grace_period?: string;
      }
    >;
    volumes?: Record<string, unknown>;
  };
  const pg = compose.services.postgres;
  const parley = compose.services.parley;
  t.ok(pg && parley, 'services postgres and parley');
  t.match(pg!.image, /^postgres:\d+/, 'PostgreSQL from its official image');
  t.ok(pg!.healthcheck?.test.includes('pg_isready'), 'PostgreSQL has a health check');
  t.ok(
    pg!.volumes?.some((v) => v.endsWith(':/var/lib/postgresql/data')),
    'its data on a volume',
  );
  t.equal(parley!.depends_on?.postgres?.condition, 'service_healthy', 'Parley waits for a healthy database');
  t.equal(parley!.build, '.', 'Parley is built from this Dockerfile');
  const env = parley!.environment ?? {};
  t.match(env.DATABASE_URL, /^postgres:\/\/[^@]+@postgres:5432\//, 'DATABASE_URL names the postgres service');
  t.ok(env.PARLEY_NODE_ID, 'a stable PARLEY_NODE_ID (a restart ends what a crash left in progress)');
  t.ok(env.PARLEY_SIP_PUBLIC_ADDRESS, 'PARLEY_SIP_PUBLIC_ADDRESS is asked for');
  t.ok(
    parley!.volumes?.some((v) => v.endsWith(':/data')),
    'the data directory on a volume',
  );
  for (const name of (parley!.volumes ?? [])
    .concat(pg!.volumes ?? [])
    .map((v) => v.split(':')[0]!)
    .filter((n) => !n.startsWith('.'))) {
    t.ok(compose.volumes && name in compose.volumes, `named volume ${name} is declared`);
  }
  const ports = parley!.ports ?? [];
  const published = (p: string) => ports.some((x) => x.split('#')[0]!.trim() === p);
  t.ok(published('3000:3000/tcp') && published('3001:3001/tcp'), 'the HTTP API and realtime ports');
  t.ok(published('5060:5060/udp') && published('5060:5060/tcp'), 'SIP over UDP and TCP');
  const range = `${env.PARLEY_RTP_PORT_MIN}-${env.PARLEY_RTP_PORT_MAX}`;
  t.ok(published(`${range}:${range}/udp`), `the RTP range it configures (${range}) is published as UDP`);
  const settings = loadSettings({
    PARLEY_RTP_PORT_MIN: env.PARLEY_RTP_PORT_MIN!,
    PARLEY_RTP_PORT_MAX: env.PARLEY_RTP_PORT_MAX!,
  });
  t.ok(settings.PARLEY_RTP_PORT_MIN < settings.PARLEY_RTP_PORT_MAX, 'a range the settings accept');
  t.ok(parley!.stop_grace_period, 'a stop grace period for saving live conversations');

  // The real validator: Compose v2 (the docker plugin) where it is installed, else docker-compose 1.29 (Debian's
  // docker-compose, which .ci/run installs); it needs no container runtime.
  const v2 = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0;
  const [cmd, ...pre] = v2 ? ['docker', 'compose'] : ['docker-compose'];
  const validate = (extra: Record<string, string>) =>
    spawnSync(cmd!, [...pre, '-f', join(ROOT, 'compose.yaml'), 'config'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, POSTGRES_PASSWORD: '', PARLEY_SIP_PUBLIC_ADDRESS: '', ...extra },
    });
  const config = validate({ POSTGRES_PASSWORD: 'example', PARLEY_SIP_PUBLIC_ADDRESS: '192.0.2.10' });
  if (config.error)
    throw new Error(
      `${cmd} is needed to validate compose.yaml (Debian: docker-compose; .ci/run installs it): ${config.error.message}`,
    );
  t.equal(config.status, 0, `${v2 ? 'docker compose' : 'docker-compose'} config accepts it`, { stderr: config.stderr });
  const resolved = parseYaml(config.stdout) as { services: Record<string, { environment: Record<string, string> }> };
  t.equal(
    resolved.services.parley?.environment.DATABASE_URL,
    'postgres://parley:example@postgres:5432/parley',
    'the password reaches DATABASE_URL',
  );
  const missing = validate({ PARLEY_SIP_PUBLIC_ADDRESS: '192.0.2.10' });
  t.not(missing.status, 0, 'without POSTGRES_PASSWORD it refuses to start');
  t.match(missing.stderr, /POSTGRES_PASSWORD/, 'naming it');
});

t.test('the production install (npm ci --omit=dev) has every package the server loads', async (t) => {
  const problems = runtimeDependencyProblems();
  t.same(problems, [], 'every package imported by src/ and sip/ is a non-dev dependency');

  // The check sees a dev-only import, and type-only imports are skipped.
  const fake = mkdtempSync(join(tmpdir(), 'parley-deps-'));
  t.teardown(() => rmSync(fake, { recursive: true, force: true }));
  mkdirSync(join(fake, 'src'));
  writeFileSync(
    join(fake, 'src', 'a.ts'),
    "import type { X } from 'typeonly';\nimport tap from 'tap';\nconst m = await import('postgres');\nexport { tap, m };\n",
  );
  writeFileSync(
    join(fake, 'package.json'),
    JSON.stringify({ dependencies: { postgres: '1' }, devDependencies: { tap: '1', typeonly: '1' } }),
  );
  writeFileSync(
    join(fake, 'package-lock.json'),
    JSON.stringify({ packages: { 'node_modules/postgres': {}, 'node_modules/tap': { dev: true } } }),
  );
  t.same(runtimeDependencyProblems(fake), [
    "src/a.ts: loads 'tap' at run time, which is a devDependency: move it to dependencies",
  ]);
  t.same(runtimeSpecifiers("const r = import.meta.resolve('tsx/esm/api'); require('x'); export * from './y.js';"), [
    'tsx/esm/api',
    'x',
    './y.js',
  ]);

  // npm's own view of the production tree: nothing missing or invalid once the dev dependencies are left out.
  const ls = spawnSync('npm', ['ls', '--omit=dev', '--all', '--offline'], { cwd: ROOT, encoding: 'utf8' });
  t.equal(ls.status, 0, 'npm ls --omit=dev finds the production tree complete', { stderr: ls.stderr.slice(-2000) });
});

/** Why the image cannot be built here (no container runtime answers), or null when it can. */
function noRuntime(): string | null {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8' });
  if (info.status === 0) return null;
  const why = (info.stderr || info.error?.message || 'docker info failed').trim().split('\n').at(-1);
  process.stderr.write(`\n*** deploy.test.ts: NO CONTAINER RUNTIME: the image was NOT built (${why}) ***\n\n`);
  return `no container runtime answers (docker info: ${why}): the image was not built`;
}

const skipBuild = noRuntime();
t.test(
  'the image builds and runs as a non-root user with a health check (needs a container runtime)',
  { skip: skipBuild ?? false },
  async (t) => {
    const tag = `parley-test:${process.pid}`;
    t.teardown(() => void spawnSync('docker', ['image', 'rm', '-f', tag]));
    const build = spawnSync('docker', ['build', '-t', tag, ROOT], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    t.equal(build.status, 0, 'docker build succeeds', { output: (build.stdout + build.stderr).slice(-3000) });
    const inspect = spawnSync(
      'docker',
      ['image', 'inspect', tag, '--format', '{{.Config.User}} {{json .Config.Healthcheck.Test}}'],
      { encoding: 'utf8' },
    );
    t.match(inspect.stdout, /^node \[/, 'runs as node, with a health check');
    const run = spawnSync(
      'docker',
      [
        'run',
        '--rm',
        '--entrypoint',
        'node',
        tag,
        '-e',
        "require('/app/native/build/Release/parley_dsp.node'); require('@discordjs/opus'); process.stdout.write(require('node:child_process').execFileSync('espeak-ng', ['--version']).toString())",
      ],
      { encoding: 'utf8' },
    );
    t.equal(run.status, 0, 'the addon, Opus and espeak-ng load in the image', { stderr: run.stderr });
  },
);
