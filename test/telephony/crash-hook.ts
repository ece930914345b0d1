// A test hook preloaded into a node (`node --import`): SIGUSR2 makes each of its media worker threads throw an
// uncaught error, as a bug would end them (no shutdown of their own: main sees them exit unexpectedly). Keeps every
// Worker the node makes by replacing worker_threads' export before the node's modules import it, and gives each
// a listener, ahead of the worker's own code, that throws on the hook's message.
import { syncBuiltinESMExports } from 'node:module';
import workerThreads from 'node:worker_threads';

const CRASH = 'test_hook_crash';
const CRASH_LISTENER = `import('node:worker_threads').then(({ parentPort }) => parentPort.on('message', (m) => {
  if (m && m.type === ${JSON.stringify(CRASH)}) throw new Error('media worker crash (test hook)');
}));
`;

const made: InstanceType<typeof workerThreads.Worker>[] = [];
const Original = workerThreads.Worker;
class KeptWorker extends Original {
  constructor(...[code, options]: ConstructorParameters<typeof Original>) {
    if (!options?.eval || typeof code !== 'string') throw new Error("crash-hook: expected the node's eval bootstrap");
    super(CRASH_LISTENER + code, options);
    made.push(this);
  }
}
workerThreads.Worker = KeptWorker as typeof Original;
syncBuiltinESMExports();

process.on('SIGUSR2', () => {
  for (const w of made) w.postMessage({ type: CRASH });
});
