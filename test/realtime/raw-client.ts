// A WebSocket client by hand over a plain TCP socket, for tests that need what the `ws` client hides: a client
// that stops reading (its kernel buffers fill and the server's socket backs up).
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { SocketInspection } from '../../src/workers/worker-protocol.js';
import { FRAME_MS } from '../helpers/realtime.js';
import { until } from '../helpers/wait.js';

/** pcm_48000: the largest frames the protocol offers, so the slow socket backs up in seconds. */
export const SLOW_FORMAT = 'pcm_48000';
/** One 20 ms pcm_48000 frame as an audio_chunk event: 1,920 bytes as base64 plus the JSON around it. */
export const SLOW_FRAME_EVENT_BYTES = Math.ceil((48_000 * 2 * FRAME_MS) / 1000 / 3) * 4 + 64;
/**
 * Minutes of speech: the kernel takes ~4 MB of a loopback socket that is not read (send buffer autotuned up to
 * tcp_wmem's maximum) before uWS holds anything, about 30 s of pcm_48000 as base64 events.
 */
export const LONG_TEXT = Array.from(
  { length: 30 },
  () => 'The quick brown fox jumps over the lazy dog while the band keeps playing on the old pier.',
).join(' ');

/** How long a slow socket may take to back up past the kernel's buffers (about 30 s of audio), on a loaded machine. */
export const BACKUP_TIMEOUT_MS = 120_000;
/** How long a drained socket's audio may take to resume. */
export const RESUME_TIMEOUT_MS = 10_000;
const POLL_MS = 100;

/** The server's view of one socket (from server.pool.inspect()), undefined while it is not found. */
export type InspectSocket = () => Promise<SocketInspection | undefined>;

/** Inspects the socket (every 100 ms) until `done` holds of it, or `timeoutMs` passes: the last inspection. */
async function pollInspection(
  inspect: InspectSocket,
  done: (s: SocketInspection | undefined) => boolean,
  timeoutMs: number,
  what: string,
) {
  let last: SocketInspection | undefined;
  await until(async () => done((last = await inspect())), {
    what: () => `${what} (last seen: ${JSON.stringify(last)})`,
    timeoutMs,
    intervalMs: POLL_MS,
  });
  return last;
}

/**
 * Asks for LONG_TEXT and stops reading, then waits for the socket to back up past the kernel's buffers (uWS then
 * holds bytes and the audio pauses); the last inspection. Fails when it never backs up.
 */
export function speakUnread(client: RawClient, inspect: InspectSocket): Promise<SocketInspection | undefined> {
  client.send({ type: 'say', text: LONG_TEXT });
  client.stopReading();
  return pollInspection(
    inspect,
    (s) => s?.audioPaused === true,
    BACKUP_TIMEOUT_MS,
    'the unread socket to back up and pause its audio',
  );
}

/** Reads again and waits for the socket's audio to resume; the last inspection. */
export function resumeReading(client: RawClient, inspect: InspectSocket): Promise<SocketInspection | undefined> {
  client.socket.resume();
  return pollInspection(
    inspect,
    (s) => s !== undefined && !s.audioPaused,
    RESUME_TIMEOUT_MS,
    'the socket read again to resume its audio',
  );
}

/** A WebSocket client by hand (RFC 6455 4.1, 5.2): handshake, masked text frames out, raw bytes in. */
export class RawClient {
  private received = '';
  private constructor(readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (this.received += chunk));
  }

  static async open(port: number, path: string, headers: Record<string, string>): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const client = new RawClient(socket);
    const lines = [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    await client.until((r) => r.includes('\r\n\r\n'));
    if (!client.received.startsWith('HTTP/1.1 101'))
      throw new Error(`upgrade refused: ${client.received.split('\r\n')[0]}`);
    return client;
  }

  /** Resolves once what was received (as latin1 text) satisfies `test`. */
  until(test: (received: string) => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!test(this.received)) return;
        this.socket.off('data', check);
        resolve();
      };
      this.socket.on('data', check);
      this.socket.once('close', () => reject(new Error('socket closed')));
      check();
    });
  }

  /** One masked text frame (RFC 6455 5.3: every client frame is masked). */
  send(message: Record<string, unknown>): void {
    const payload = Buffer.from(JSON.stringify(message));
    const mask = randomBytes(4);
    const head =
      payload.length < 126
        ? Buffer.from([0x81, 0x80 | payload.length])
        : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
    const masked = Buffer.alloc(payload.length);
    for (let i = 0; i < payload.length; i++) masked[i] = payload[i] ^ mask[i & 3];
    this.socket.write(Buffer.concat([head, mask, masked]));
  }

  stopReading(): void {
    this.socket.pause();
  }
}
