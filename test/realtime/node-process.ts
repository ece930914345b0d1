// A Parley node as a user runs it (`npm start`): a child process on its own data directory, reached on the ports it
// reports (HTTP and realtime on port 0), for tests that kill it (SIGKILL) or cut its database.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { USER_NODE, userEnv } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface NodeProcess extends SpawnedNode {
  /** http://127.0.0.1:<port> of the control plane. */
  url: string;
  /** ws://127.0.0.1:<port> of the realtime port. */
  wsUrl: string;
}

export interface SpawnedNode {
  /** The node's process id (its media workers are threads of it). */
  pid: number;
  output(): string;
  waitFor(re: RegExp): Promise<RegExpExecArray>;
  /** Resolves with the signal that ended it (null for a normal exit). */
  exited: Promise<NodeJS.Signals | null>;
  /** Its exit code once it exited normally (null while it runs or when a signal ended it). */
  exitCode(): number | null;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Runs src/main.ts with `env` (PARLEY_LOG_LEVEL info, one worker, ports 0 unless given), without waiting; `preload`:
 * modules imported before it (test hooks).
 */
export function spawnNode(env: Record<string, string>, preload: string[] = []): SpawnedNode {
  const childEnv = userEnv({
    PARLEY_HTTP_PORT: '0',
    PARLEY_WS_PORT: '0',
    PARLEY_HOST: '127.0.0.1',
    PARLEY_LOG_LEVEL: 'info',
    PARLEY_WORKERS: '1',
    ...env,
  });
  const [cmd, ...pre] = USER_NODE;
  const child: ChildProcess = spawn(
    cmd,
    [...pre, '--import', 'tsx', ...preload.flatMap((m) => ['--import', m]), 'src/main.ts'],
    { cwd: ROOT, env: childEnv },
  );
  let out = '';
  const waiters: (() => void)[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => {
      for (const w of waiters.splice(0)) w();
      resolve(signal);
    }),
  );
  const waitFor = (re: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = re.exec(out);
        if (m) return resolve(m);
        if (child.exitCode !== null || child.signalCode !== null)
          return reject(new Error(`the node ended before ${re}: ${out.slice(-3000)}`));
        waiters.push(check);
      };
      check();
    });
  return {
    pid: child.pid!,
    output: () => out,
    waitFor,
    exited,
    exitCode: () => child.exitCode,
    kill: (signal) => void child.kill(signal),
  };
}

/** Starts a node (spawnNode) and waits for `parley ready`; its ports are the ones it reports. */
export async function startNode(env: Record<string, string>, preload: string[] = []): Promise<NodeProcess> {
  const node = spawnNode(env, preload);
  const [, wsPort] = await node.waitFor(/"port":(\d+),"workers":\d+,"msg":"realtime workers listening"/);
  const [, url] = await node.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"control plane listening"/);
  await node.waitFor(/"msg":"parley ready"/);
  return { ...node, url, wsUrl: `ws://127.0.0.1:${wsPort}` };
}
