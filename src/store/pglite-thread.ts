// The store thread (embedded mode): PGlite and its socket server, off the main thread (docs/ARCHITECTURE.md, "Process shape").
// Started by pglite.ts with workerData; answers on the parent port.
import { parentPort, workerData } from 'node:worker_threads';
import { readFile, writeFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface StoreThreadOptions {
  /** Directory of the database files, or undefined for an in-memory database. */
  dataDir?: string;
  /** A tarball made by dumpDataDir to start from (in-memory databases only). */
  loadFrom?: string;
}

export type StoreThreadRequest = { type: 'dump'; path: string } | { type: 'close' };
export type StoreThreadReply =
  { type: 'listening'; port: number } | { type: 'dumped' } | { type: 'closed' } | { type: 'failed'; message: string };

const port = parentPort;
if (!port) throw new Error('pglite-thread.ts must run in a worker thread');
const options = workerData as StoreThreadOptions;

function reply(message: StoreThreadReply): void {
  port!.postMessage(message);
}

async function start(): Promise<{ db: PGlite; server: PGLiteSocketServer }> {
  const loadDataDir = options.loadFrom ? new Blob([await readFile(options.loadFrom)]) : undefined;
  const db = await PGlite.create(options.dataDir ?? 'memory://', loadDataDir ? { loadDataDir } : {});
  // One client connection only: pglite-socket 0.2 interleaves the protocol of concurrent ones.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  const conn = server.getServerConn();
  const listenPort = Number(conn.slice(conn.lastIndexOf(':') + 1));
  reply({ type: 'listening', port: listenPort });
  return { db, server };
}

start().then(
  ({ db, server }) => {
    port.on('message', (req: StoreThreadRequest) => {
      if (req.type === 'dump') {
        db.dumpDataDir('gzip')
          .then(async (file) => writeFile(req.path, Buffer.from(await file.arrayBuffer())))
          .then(
            () => reply({ type: 'dumped' }),
            (err: Error) => reply({ type: 'failed', message: `dump failed: ${err.message}` }),
          );
      } else {
        server
          .stop()
          .then(() => db.close())
          .then(
            () => {
              reply({ type: 'closed' });
              port.close();
            },
            (err: Error) => reply({ type: 'failed', message: `close failed: ${err.message}` }),
          );
      }
    });
  },
  (err: Error) => reply({ type: 'failed', message: `PGlite did not start: ${err.message}` }),
);
