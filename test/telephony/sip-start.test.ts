// `npm start` with SIP: the node listens on PARLEY_SIP_PORT (0: a free port, logged), answers OPTIONS, and closes SIP
// on SIGTERM with a clean exit; a SIP port it cannot bind stops start-up with a message naming PARLEY_SIP_PORT.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { USER_NODE, userEnv } from '../helpers/server.js';
import { createTempDatabase } from '../helpers/temp-database.js';
import { runSipp } from './sipp-scenario.js';

// Real start-ups with a media worker each: slow on a loaded machine.
t.setTimeout(300_000);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function startMain(env: Record<string, string>) {
  const [cmd, ...pre] = USER_NODE;
  const child = spawn(cmd, [...pre, '--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: userEnv({ PARLEY_HTTP_PORT: '0', PARLEY_WS_PORT: '0', PARLEY_LOG_LEVEL: 'info', PARLEY_WORKERS: '1', ...env }),
  });
  let out = '';
  const changed: (() => void)[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of changed.splice(0)) w();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      for (const w of changed.splice(0)) w();
      resolve(code);
    }),
  );
  return {
    output: () => out,
    exited,
    kill: (signal: NodeJS.Signals) => child.kill(signal),
    waitFor: (re: RegExp) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        const check = () => {
          const m = re.exec(out);
          if (m) return resolve(m);
          if (child.exitCode !== null)
            return reject(new Error(`exited ${child.exitCode} before ${re}: ${out.slice(-2000)}`));
          changed.push(check);
        };
        check();
      }),
  };
}

t.test('PARLEY_SIP_PORT=0: the port is logged, OPTIONS answered, SIGTERM closes SIP and exits cleanly', async (t) => {
  const db = await createTempDatabase('parley_test_sip_start');
  t.teardown(db.drop);
  const main = startMain({
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: 'bootstrap-key-for-sip-tests-0123456789',
    PARLEY_SIP_PORT: '0',
  });
  t.teardown(() => main.kill('SIGKILL'));
  const [, port] = await main.waitFor(/"port":(\d+),"host":"127\.0\.0\.1"[^\n]*"msg":"SIP listening"/);
  await main.waitFor(/"msg":"parley ready"/);
  const probe = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${port}` });
  t.same(probe.statuses, [200], 'OPTIONS answered on the logged port');
  main.kill('SIGTERM');
  t.equal(await main.exited, 0, 'clean exit', { output: main.output().slice(-2000) });
  t.match(main.output(), /"msg":"SIP closed"/);
});

t.test('a SIP port already taken stops start-up naming PARLEY_SIP_PORT', async (t) => {
  const db = await createTempDatabase('parley_test_sip_taken');
  t.teardown(db.drop);
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const port = (taken.address() as { port: number }).port;
  const main = startMain({
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: 'bootstrap-key-for-sip-tests-0123456789',
    PARLEY_SIP_PORT: `${port}`,
  });
  t.teardown(() => main.kill('SIGKILL'));
  t.equal(await main.exited, 1, 'start-up failed');
  t.match(main.output(), new RegExp(`PARLEY_SIP_PORT: cannot listen for SIP on 127\\.0\\.0\\.1:${port}`));
});
