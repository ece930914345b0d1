// A fake OpenAI-compatible speech server for tests: `POST /v1/audio/transcriptions` (multipart: file, model,
// language...) answers `{text}` from a queue of transcripts (with `response_format=verbose_json`: also `words`
// with their times, as queued or else spread evenly over the uploaded WAV); `POST /v1/audio/speech` (JSON: model, input, voice,
// response_format) answers a tone as long as the input (per character), as raw 24 kHz PCM or a WAV at 22050 Hz.
// Records every request (transcription uploads parsed with the platform's own multipart reader). 127.0.0.1, port 0.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Speech per input character: 20 ms. */
export const FAKE_TTS_MS_PER_CHAR = 20;

export interface RecordedTranscription {
  fields: Record<string, string>;
  file: { name: string; type: string; bytes: Buffer };
  authorization: string | undefined;
}

/** A transcript with its words' times (seconds from the start of the uploaded audio). */
export interface FakeTranscript {
  text: string;
  words: { word: string; start: number; end: number }[];
}

/** Seconds of audio in a mono 16-bit WAV with a canonical 44-byte header. */
function wavSeconds(bytes: Buffer): number {
  return bytes.length < 44 ? 0 : (bytes.length - 44) / 2 / bytes.readUInt32LE(24);
}

/** The answer to a transcription request: `{text}`, or verbose_json with words. */
function transcription(
  entry: string | FakeTranscript | undefined,
  fields: Record<string, string>,
  file: Buffer,
): unknown {
  const queued = typeof entry === 'string' || entry === undefined ? { text: entry ?? '', words: null } : entry;
  if (fields.response_format !== 'verbose_json') return { text: queued.text };
  const duration = wavSeconds(file);
  let words = queued.words;
  if (!words) {
    const list = queued.text.split(/\s+/).filter(Boolean);
    words = list.map((word, i) => ({
      word,
      start: (i * duration) / list.length,
      end: ((i + 1) * duration) / list.length,
    }));
  }
  return {
    task: 'transcribe',
    language: fields.language ?? 'english',
    duration,
    text: queued.text,
    words,
    segments: [],
  };
}

export interface RecordedSpeech {
  body: { model: string; input: string; voice: string; response_format: string };
  authorization: string | undefined;
}

export interface FakeSpeechServer {
  baseUrl: string;
  transcriptions: RecordedTranscription[];
  speeches: RecordedSpeech[];
  /** Transcripts answered in order (then ''); a verbose_json request answers a string's words spread over the file. */
  transcripts: (string | FakeTranscript)[];
  /** The next transcription / speech requests answer this HTTP status instead. */
  failTranscription: number | null;
  failSpeech: number | null;
  /** Speech answers as WAV (22050 Hz) instead of raw 24 kHz PCM, whatever was asked. */
  speechAsWav: boolean;
  close(): Promise<void>;
}

function tone(samples: number, rate: number): Buffer {
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++)
    out.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 330 * i) / rate)), i * 2);
  return out;
}

function wav(pcm: Buffer, rate: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + pcm.length, 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([h, pcm]);
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeSpeechServer(): Promise<FakeSpeechServer> {
  const fake: FakeSpeechServer = {
    baseUrl: '',
    transcriptions: [],
    speeches: [],
    transcripts: [],
    failTranscription: null,
    failSpeech: null,
    speechAsWav: false,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = createServer((req, res) => {
    void (async () => {
      const raw = await body(req);
      if (req.method === 'POST' && req.url === '/v1/audio/transcriptions') {
        // The platform's multipart parser: a Request over the raw body.
        const form = await new Request('http://fake/', {
          method: 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? '' },
          body: raw,
        }).formData();
        const fields: Record<string, string> = {};
        let file: RecordedTranscription['file'] | null = null;
        for (const [k, v] of form.entries()) {
          if (typeof v === 'string') fields[k] = v;
          else file = { name: v.name, type: v.type, bytes: Buffer.from(await v.arrayBuffer()) };
        }
        fake.transcriptions.push({ fields, file: file!, authorization: req.headers.authorization });
        if (fake.failTranscription !== null) {
          res
            .writeHead(fake.failTranscription, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message: 'model overloaded' } }));
          return;
        }
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(transcription(fake.transcripts.shift(), fields, file!.bytes)));
        return;
      }
      if (req.method === 'POST' && req.url === '/v1/audio/speech') {
        const parsed = JSON.parse(raw.toString()) as RecordedSpeech['body'];
        fake.speeches.push({ body: parsed, authorization: req.headers.authorization });
        if (fake.failSpeech !== null) {
          res
            .writeHead(fake.failSpeech, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message: 'voice unknown' } }));
          return;
        }
        const ms = parsed.input.length * FAKE_TTS_MS_PER_CHAR;
        if (fake.speechAsWav || parsed.response_format === 'wav') {
          res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav(tone((22050 * ms) / 1000, 22050), 22050));
        } else {
          res.writeHead(200, { 'content-type': 'audio/pcm' }).end(tone((24000 * ms) / 1000, 24000));
        }
        return;
      }
      res.writeHead(404).end();
    })().catch((err: Error) => res.writeHead(500).end(err.message));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}
