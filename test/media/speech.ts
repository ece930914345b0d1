// Test helper: real recorded speech (Debian's asterisk-core-sounds-en-wav, 8 kHz mono 16-bit).
import { readFileSync, existsSync } from 'node:fs';
import wavefile from 'wavefile';
import { soundFile } from '../helpers/debian-packages.js';

export { SOUNDS_DIR } from '../helpers/debian-packages.js';

/** Reads a prompt as 8 kHz PCM; fails loudly when the package is missing (CI installs it). */
export function loadPrompt(name: string): Int16Array {
  const path = soundFile(name);
  if (!existsSync(path)) throw new Error(`${path} missing: apt-get install asterisk-core-sounds-en-wav`);
  const w = new wavefile.WaveFile();
  w.fromBuffer(readFileSync(path));
  const fmt = w.fmt as { sampleRate: number; numChannels: number; bitsPerSample: number };
  if (fmt.sampleRate !== 8000 || fmt.numChannels !== 1 || fmt.bitsPerSample !== 16)
    throw new Error(`${path}: not 8 kHz mono 16-bit`);
  return Int16Array.from(w.getSamples(false, Int16Array) as unknown as ArrayLike<number>);
}

/** Frames (or chunks) of PCM joined end to end into one array. */
export function concatPcm(frames: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) {
    out.set(f, at);
    at += f.length;
  }
  return out;
}
