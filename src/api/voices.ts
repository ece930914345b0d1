// Voices: GET /v1/voices and /v1/voices/{id} with `audio_url` a signed sample link valid 7 days, and the sample
// itself, served outside /v1 at that link (no API key: the signature is the credential). The catalog is the
// domain's (src/domain/voices.ts).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { voiceCatalog } from '../domain/voices.js';
import { VOICE_SAMPLE_TTL_SECONDS, voiceBody, voiceParams, voicesBody, type CatalogVoice } from '../schemas/voices.js';
import type { AppContext } from './context.js';
import { ApiError, notFound } from './errors.js';
import type { RoutePlugin } from './types.js';

const run = promisify(execFile);

const samplePath = (id: string) => `/samples/voices/${id}.wav`;

// ---- sample audio -----------------------------------------------------------------------------------------------

/** Fallback sample when espeak-ng is missing: 16 kHz mono 16-bit PCM, three short tones. */
const TONE_RATE_HZ = 16_000;
const TONE_FREQS_HZ = [440, 554, 659];
const TONE_MS = 250;

function toneWav(): Buffer {
  const perTone = (TONE_RATE_HZ * TONE_MS) / 1000;
  const samples = perTone * TONE_FREQS_HZ.length;
  const buf = Buffer.alloc(44 + samples * 2);
  // RIFF/WAVE header, PCM format 1 (Microsoft WAVE spec).
  buf.write('RIFF', 0);
  buf.writeUInt32LE(36 + samples * 2, 4);
  buf.write('WAVEfmt ', 8);
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20);
  buf.writeUInt16LE(1, 22);
  buf.writeUInt32LE(TONE_RATE_HZ, 24);
  buf.writeUInt32LE(TONE_RATE_HZ * 2, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36);
  buf.writeUInt32LE(samples * 2, 40);
  TONE_FREQS_HZ.forEach((f, k) => {
    for (let i = 0; i < perTone; i++) {
      const v = Math.sin((2 * Math.PI * f * i) / TONE_RATE_HZ) * 0.3 * 32767;
      buf.writeInt16LE(Math.round(v), 44 + (k * perTone + i) * 2);
    }
  });
  return buf;
}

/** Makes and caches each voice's sample once (espeak-ng when installed, a tone pattern otherwise). */
class SampleCache {
  private readonly inFlight = new Map<string, Promise<Buffer>>();
  constructor(private readonly dir: string) {}

  get(v: CatalogVoice): Promise<Buffer> {
    let p = this.inFlight.get(v.id);
    if (!p) {
      p = this.make(v).finally(() => this.inFlight.delete(v.id));
      this.inFlight.set(v.id, p);
    }
    return p;
  }

  private async make(v: CatalogVoice): Promise<Buffer> {
    const file = join(this.dir, `${v.id}.wav`);
    if (existsSync(file)) return readFile(file);
    mkdirSync(this.dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    const text = v.sample_text ?? `Hello, I am ${v.name}. How can I help you today?`;
    try {
      await run('espeak-ng', ['-v', v.engines.echo ?? 'en-us', '-w', tmp, text]);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await writeFile(tmp, toneWav());
    }
    await rename(tmp, file);
    return readFile(file);
  }
}

/** A server's catalog (loaded once) by voice id. */
const catalogById = (ctx: AppContext) => new Map(voiceCatalog(ctx.settings).map((v) => [v.id, v]));

export const voiceRoutes: RoutePlugin = async (app, ctx) => {
  const catalog = voiceCatalog(ctx.settings);
  const byId = catalogById(ctx);
  const record = (v: CatalogVoice) => ({
    id: v.id,
    name: v.name,
    description: v.description,
    audio_url: ctx.publicUrl() + ctx.signer.sign(samplePath(v.id), VOICE_SAMPLE_TTL_SECONDS, ctx.now()),
  });

  app.get('/voices', { schema: { tags: ['voices'], response: { 200: voicesBody } } }, async () => ({
    voices: catalog.map(record),
  }));

  app.get(
    '/voices/:id',
    { schema: { tags: ['voices'], params: voiceParams, response: { 200: voiceBody } } },
    async (req) => {
      const v = byId.get(req.params.id);
      if (!v) throw notFound('voice', req.params.id);
      return { voice: record(v) };
    },
  );
};

/** The sample audio at a voice's signed link, outside /v1. */
export const voiceSampleRoutes: RoutePlugin = async (app, ctx) => {
  const byId = catalogById(ctx);
  const samples = new SampleCache(resolve(ctx.settings.PARLEY_DATA_DIR, 'voice-samples'));

  app.get(
    '/samples/voices/:file',
    {
      schema: {
        hide: true,
        params: z.object({ file: z.string().regex(/^[a-z][a-z0-9_]{0,31}\.wav$/) }),
        querystring: z.object({ expires: z.string().optional(), sig: z.string().optional() }),
      },
    },
    async (req, reply) => {
      const id = req.params.file.slice(0, -'.wav'.length);
      if (!ctx.signer.verify(samplePath(id), req.query.expires, req.query.sig, ctx.now())) {
        throw new ApiError(403, 'the link is invalid or has expired', { code: 'invalid_signature' });
      }
      const v = byId.get(id);
      if (!v) throw notFound('voice', id);
      const wav = await samples.get(v);
      return reply.header('content-type', 'audio/wav').header('cache-control', 'private, max-age=3600').send(wav);
    },
  );
};
