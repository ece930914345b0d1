// Conversation recordings behind signed, expiring links (the `audio_url` of a conversation). The link itself is the
// credential: no Authorization header, 403 on a bad or expired signature. Files live under
// PARLEY_DATA_DIR/recordings as `wav` or `wav.gz`; either container is served from either stored form.
import { open, type FileHandle } from 'node:fs/promises';
import { pipeline } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { z } from 'zod';
import { recordingPath } from '../media/recording.js';
import {
  AUDIO_CONTAINERS,
  RECORDING_SIDES,
  type AudioContainer,
  type RecordingSide,
} from '../schemas/conversations.js';
import { storedRecording } from '../domain/conversations.js';
import type { RecordingRow } from '../store/conversations.js';
import type { AppContext } from './context.js';
import { forbidden, notFound } from './errors.js';
import { API_PREFIX, type RoutePlugin } from './types.js';

const FILE_PATTERN = new RegExp(
  `^(${RECORDING_SIDES.join('|')})\\.(${AUDIO_CONTAINERS.map((c) => c.replace('.', '\\.')).join('|')})$`,
);

const CONTENT_TYPE: Record<AudioContainer, string> = { wav: 'audio/wav', 'wav.gz': 'application/gzip' };

const params = z.object({
  id: z.string().min(1).max(200),
  file: z.string().regex(FILE_PATTERN, `must be <side>.<container> (sides: ${RECORDING_SIDES.join(', ')})`),
});
const query = z.object({ expires: z.string().optional(), sig: z.string().optional() });

function linkPath(conversationId: string, side: RecordingSide, container: AudioContainer): string {
  return `${API_PREFIX}/recordings/${encodeURIComponent(conversationId)}/${side}.${container}`;
}

/** A link to a conversation's recording in `container`, valid `ttlSec` from now. */
export function recordingLink(
  ctx: AppContext,
  conversationId: string,
  side: RecordingSide,
  container: AudioContainer,
  ttlSec: number,
): string {
  return `${ctx.publicUrl()}${ctx.signer.sign(linkPath(conversationId, side, container), ttlSec, ctx.now())}`;
}

/** The absolute path of a stored recording; throws when a stored path would leave the recordings directory. */
export function recordingFile(ctx: AppContext, stored: string): string {
  return recordingPath(ctx.settings.PARLEY_DATA_DIR, stored);
}

/** How many times a recording is looked up when its file vanished between reading the row and opening the file. */
const OPEN_ATTEMPTS = 2;

/**
 * Opens a conversation's stored recording, or null when it has none. The file is opened before anything is sent:
 * the background compressor (src/media/recording-compressor.ts) moves a row from its `.wav` to the finished
 * `.wav.gz` and then unlinks the `.wav`, so a `.wav` missing right after its row was read means the row has moved;
 * it is read once more. An open file stays readable after that unlink.
 */
export async function openRecording(
  lookup: () => Promise<RecordingRow | null>,
  fileOf: (row: RecordingRow) => string,
): Promise<{ row: RecordingRow; file: FileHandle } | null> {
  for (let attempt = 1; attempt <= OPEN_ATTEMPTS; attempt++) {
    const row = await lookup();
    if (!row) return null;
    try {
      return { row, file: await open(fileOf(row), 'r') };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return null;
}

export const recordingRoutes: RoutePlugin = async (app, ctx) => {
  app.get(
    '/recordings/:id/:file',
    { config: { public: true }, schema: { tags: ['conversations'], params, querystring: query } },
    async (req, reply) => {
      const { id, file } = req.params;
      const [, side, container] = FILE_PATTERN.exec(file)! as unknown as [string, RecordingSide, AudioContainer];
      const path = linkPath(id, side, container);
      if (!ctx.signer.verify(path, req.query.expires, req.query.sig, ctx.now())) {
        throw forbidden('the link is invalid or has expired', 'invalid_signature');
      }
      const opened = await openRecording(
        () => storedRecording(ctx.sql, id, side),
        (row) => recordingFile(ctx, row.path),
      );
      if (!opened) throw notFound('recording', `${id}/${side}`);
      const rec = opened.row;
      const source = opened.file.createReadStream();
      reply
        .header('content-type', CONTENT_TYPE[container])
        .header('content-disposition', `attachment; filename="${id}.${container}"`)
        .header('cache-control', 'private, max-age=3600');
      if (rec.format === container) return reply.send(source);
      const converted = pipeline(source, container === 'wav' ? createGunzip() : createGzip(), (err) => {
        if (err) req.log.error({ err, conversationId: id }, 'recording: conversion failed while streaming');
      });
      return reply.send(converted);
    },
  );
};
