// Which speech engine serves a conversation, as the worker sees it: the engine registry of src/engines/, built once
// per worker (each worker has its own engines and text-to-speech cache), speaking the voices of the catalog.
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { SpeechEngine } from '../engines/engine.js';
import { createEngineRegistry } from '../engines/registry.js';
import { voiceCatalog } from '../domain/voices.js';

export function engineLookup(settings: Settings, log: Logger): (vendorModel: string | null) => SpeechEngine {
  const registry = createEngineRegistry({ settings, log, voices: voiceCatalog(settings) });
  return (vendorModel) => registry.engineFor(vendorModel);
}
