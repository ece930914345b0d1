// The engine of a conversation, as the worker sees it. Until the engine registry (src/engines/registry.ts)
// lands, every conversation gets the embedded default, the echo engine.
import { join } from 'node:path';
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { SpeechEngine } from '../engines/engine.js';
import { createEchoEngine } from '../engines/echo.js';
import { createLocalTts } from '../engines/local-tts.js';

export function engineLookup(settings: Settings, log: Logger): (vendorModel: string | null) => SpeechEngine {
  const echo = createEchoEngine({ tts: createLocalTts({ cacheDir: join(settings.PARLEY_DATA_DIR, 'tts-cache') }), voiceFor: () => 'en', log });
  return () => echo;
}
