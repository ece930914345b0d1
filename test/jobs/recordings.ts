// Stereo recordings for the post-call tests, as src/media/recording.ts writes them: 16-bit PCM WAV, left the user,
// right the assistant, under PARLEY_DATA_DIR/recordings.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { RECORDINGS_DIR } from '../../src/media/recording.js';

/** A canonical 44-byte-header stereo WAV of the two sides (the longer sets the length; the shorter padded with 0). */
export function stereoWav(user: Int16Array, assistant: Int16Array, rate: number): Buffer {
  const frames = Math.max(user.length, assistant.length);
  const out = Buffer.alloc(44 + frames * 4);
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + frames * 4, 4);
  out.write('WAVEfmt ', 8, 'latin1');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(2, 22);
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 4, 28);
  out.writeUInt16LE(4, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(frames * 4, 40);
  for (let i = 0; i < frames; i++) {
    out.writeInt16LE(user[i] ?? 0, 44 + i * 4);
    out.writeInt16LE(assistant[i] ?? 0, 46 + i * 4);
  }
  return out;
}

/** `seconds` of audio at `rate`: a 440 Hz tone within the given spans (seconds), silence elsewhere. */
export function toneSpans(seconds: number, rate: number, spans: [number, number][]): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (const [from, to] of spans) {
    for (let i = Math.round(from * rate); i < Math.round(to * rate) && i < out.length; i++) {
      out[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
    }
  }
  return out;
}

/** Writes a recording into the data directory; returns its stored path (relative to the recordings directory). */
export function writeRecording(dataDir: string, name: string, wav: Buffer, format: 'wav' | 'wav.gz' = 'wav'): string {
  const dir = join(dataDir, RECORDINGS_DIR);
  mkdirSync(dir, { recursive: true });
  const path = `${name}.${format}`;
  writeFileSync(join(dir, path), format === 'wav' ? wav : gzipSync(wav));
  return path;
}
