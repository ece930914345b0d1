// A test hook preloaded into a node (`node --import`): SIGUSR2 terminates its media worker threads at once, as a
// crash would end them (no shutdown of their own: main sees them exit unexpectedly). Keeps every Worker the node
// makes by replacing worker_threads' export before the node's modules import it.
import { syncBuiltinESMExports } from 'node:module';
import workerThreads from 'node:worker_threads';

const made: InstanceType<typeof workerThreads.Worker>[] = [];
const Original = workerThreads.Worker;
class KeptWorker extends Original {
  constructor(...args: ConstructorParameters<typeof Original>) {
    super(...args);
    made.push(this);
  }
}
workerThreads.Worker = KeptWorker as typeof Original;
syncBuiltinESMExports();

process.on('SIGUSR2', () => {
  for (const w of made) void w.terminate();
});
