// `npm start` as a user runs it, for the tests of the whole process: src/main.ts spawned with the user's
// environment (test/helpers/server.ts userEnv), its output kept and searched, its exit code awaited.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { USER_NODE, userEnv } from './server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface MainProcess {
  output: () => string;
  /** Resolves with the first match of `re` in the output (from the start); rejects if the process exits first. */
  waitFor(re: RegExp): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts src/main.ts with free ports (HTTP, realtime, SIP), one worker and info logs, `env` over them. Without
 * DATABASE_URL in `env` it runs embedded.
 */
export function startMain(env: Record<string, string>): MainProcess {
  const childEnv = userEnv({
    PARLEY_HTTP_PORT: '0',
    PARLEY_SIP_PORT: '0',
    PARLEY_LOG_LEVEL: 'info',
    PARLEY_WORKERS: '1',
    ...env,
  });
  if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
  const [cmd, ...pre] = USER_NODE;
  const child = spawn(cmd, [...pre, '--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: childEnv });
  let out = '';
  const waiters: (() => void)[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      for (const w of waiters.splice(0)) w();
      resolve(code);
    }),
  );
  return {
    output: () => out,
    exited,
    kill: (signal) => child.kill(signal),
    waitFor(re) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = re.exec(out);
          if (m) return resolve(m);
          if (child.exitCode !== null) return reject(new Error(`exited ${child.exitCode} before ${re}: ${out}`));
          waiters.push(check);
        };
        check();
      });
    },
  };
}

/** The control plane's base URL, once it listens. */
export async function controlPlaneUrl(main: MainProcess): Promise<string> {
  const [, base] = await main.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"control plane listening"/);
  return base!;
}
