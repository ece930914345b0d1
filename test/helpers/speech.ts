// Text-to-speech for tests that speak text without testing espeak-ng: the local TTS's tone backend, chosen by
// giving it an espeak-ng binary that does not exist. Its output is the same on every machine, with or without
// espeak-ng installed. The espeak-ng path itself is test/engines/local-tts-espeak.test.ts.
import { createLocalTts, type LocalTts } from '../../src/engines/local-tts.js';

/** A program name no PATH holds: the local TTS finds it missing and speaks tones. */
const NO_ESPEAK_BINARY = 'parley-test-no-espeak-ng';

/** A local TTS that always speaks the tone pattern (src/engines/local-tts.ts tonePattern); memory cache only. */
export function toneTts(): LocalTts {
  return createLocalTts({ cacheDir: null, espeakBinary: NO_ESPEAK_BINARY });
}
