// The engine registry (docs/ARCHITECTURE.md, "Speech engines"): maps an agent's `vendor_model` (vendor_v0_5,
// vendor_v1, vendor_v1_1, or none: the default) to a configured engine. PARLEY_ENGINE_DEFAULT picks the default,
// PARLEY_ENGINE_VENDOR_* override per model. Engines are built once per registry (one per worker) and checked at
// start: a selected engine whose settings are missing stops start-up with an EngineError naming them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { CatalogVoice } from '../schemas/voices.js';
import { type VENDOR_MODELS } from '../schemas/agents.js';
import { createCascadeEngine } from './cascade.js';
import { chatClientFromSettings, type ChatClient } from './chat-client.js';
import { createEchoEngine } from './echo.js';
import { EngineError, type SpeechEngine } from './engine.js';
import { createLocalTts, type LocalTts } from './local-tts.js';
import { createOpenAiRealtimeEngine } from './openai-realtime.js';
import { createScriptedEngine, parseScript, type EngineScript } from './scripted.js';

export const ENGINE_KINDS = ['echo', 'scripted', 'openai-realtime', 'cascade'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
export type VendorModel = (typeof VENDOR_MODELS)[number];

/** The espeak-ng voice when a voice id is not in the catalog (or has no echo voice). */
export const FALLBACK_ESPEAK_VOICE = 'en-us';
/** Voices of OpenAI-compatible engines when the catalog names none. */
export const FALLBACK_REALTIME_VOICE = 'alloy';

export type RegistrySettings = Pick<
  Settings,
  | 'PARLEY_DATA_DIR'
  | 'PARLEY_ENGINE_DEFAULT'
  | 'PARLEY_ENGINE_VENDOR_V0_5'
  | 'PARLEY_ENGINE_VENDOR_V1'
  | 'PARLEY_ENGINE_VENDOR_V1_1'
  | 'PARLEY_SCRIPTED_ENGINE_FILE'
  | 'PARLEY_REALTIME_URL'
  | 'PARLEY_REALTIME_API_KEY'
  | 'PARLEY_REALTIME_MODEL'
  | 'PARLEY_STT_BASE_URL'
  | 'PARLEY_STT_MODEL'
  | 'PARLEY_STT_API_KEY'
  | 'PARLEY_TTS_BASE_URL'
  | 'PARLEY_TTS_MODEL'
  | 'PARLEY_TTS_API_KEY'
  | 'PARLEY_LLM_BASE_URL'
  | 'PARLEY_LLM_MODEL'
  | 'PARLEY_LLM_API_KEY'
  | 'PARLEY_LLM_TIMEOUT_MS'
  | 'PARLEY_LLM_MAX_RETRIES'
>;

export interface RegistryOptions {
  settings: RegistrySettings;
  log: Logger;
  /** The voice catalog (loadVoiceCatalog in src/api/voices.ts). */
  voices: readonly CatalogVoice[];
  /** The scripted engine's script, overriding PARLEY_SCRIPTED_ENGINE_FILE (tests). */
  script?: EngineScript;
  /** Local text-to-speech shared by echo and scripted (default: espeak-ng, cached under PARLEY_DATA_DIR/tts-cache). */
  tts?: LocalTts;
  /** The chat model of the cascade engine (default: the PARLEY_LLM_* one). */
  chat?: ChatClient;
  /** The OpenAI Realtime engine's turn detection (default Parley's VAD). */
  realtimeTurnDetection?: 'parley' | 'server';
}

export interface EngineRegistry {
  /** The engine of a `vendor_model` (null or unknown: the default engine). */
  engineFor(vendorModel: string | null): SpeechEngine;
  /** Which engine kind serves a `vendor_model`. */
  kindFor(vendorModel: string | null): EngineKind;
}

/** The engine of each vendor_model value and of the default. */
export function engineSelection(settings: RegistrySettings): {
  default: EngineKind;
  byModel: Record<VendorModel, EngineKind>;
} {
  const d = settings.PARLEY_ENGINE_DEFAULT;
  return {
    default: d,
    byModel: {
      vendor_v0_5: settings.PARLEY_ENGINE_VENDOR_V0_5 ?? d,
      vendor_v1: settings.PARLEY_ENGINE_VENDOR_V1 ?? d,
      vendor_v1_1: settings.PARLEY_ENGINE_VENDOR_V1_1 ?? d,
    },
  };
}

/** A catalog voice id -> that engine's voice. */
export function voiceMapper(voices: readonly CatalogVoice[], engine: EngineKind): (voiceId: string) => string {
  const byId = new Map(voices.map((v) => [v.id, v]));
  // scripted speaks with the local text-to-speech, as echo does.
  const key = engine === 'scripted' ? 'echo' : engine;
  const fallback = key === 'echo' ? FALLBACK_ESPEAK_VOICE : FALLBACK_REALTIME_VOICE;
  return (voiceId) => byId.get(voiceId)?.engines[key] ?? fallback;
}

export function createEngineRegistry(options: RegistryOptions): EngineRegistry {
  const { settings, log } = options;
  const selection = engineSelection(settings);
  const kinds = new Set<EngineKind>([selection.default, ...Object.values(selection.byModel)]);
  let tts: LocalTts | null = options.tts ?? null;
  const localTts = () => (tts ??= createLocalTts({ cacheDir: join(settings.PARLEY_DATA_DIR, 'tts-cache') }));

  const build: Record<EngineKind, () => SpeechEngine> = {
    echo: () => createEchoEngine({ tts: localTts(), voiceFor: voiceMapper(options.voices, 'echo'), log }),
    scripted: () => {
      let script = options.script ?? null;
      if (!script && settings.PARLEY_SCRIPTED_ENGINE_FILE) {
        const file = settings.PARLEY_SCRIPTED_ENGINE_FILE;
        try {
          script = parseScript(JSON.parse(readFileSync(file, 'utf8')));
        } catch (err) {
          throw new EngineError(`PARLEY_SCRIPTED_ENGINE_FILE ${file}: ${(err as Error).message}`, 'scripted', {
            cause: err,
          });
        }
      }
      return createScriptedEngine({ tts: localTts(), voiceFor: voiceMapper(options.voices, 'scripted'), log, script });
    },
    'openai-realtime': () => {
      if (!settings.PARLEY_REALTIME_URL) throw new EngineError('PARLEY_REALTIME_URL is not set', 'openai-realtime');
      return createOpenAiRealtimeEngine({
        url: settings.PARLEY_REALTIME_URL,
        model: settings.PARLEY_REALTIME_MODEL,
        apiKey: settings.PARLEY_REALTIME_API_KEY,
        voiceFor: voiceMapper(options.voices, 'openai-realtime'),
        turnDetection: options.realtimeTurnDetection,
        log,
      });
    },
    cascade: () => {
      const missing: string[] = (['PARLEY_STT_BASE_URL', 'PARLEY_TTS_BASE_URL'] as const).filter((k) => !settings[k]);
      const chat = options.chat ?? chatClientFromSettings(settings, log);
      if (!chat) missing.push('PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL');
      if (missing.length > 0 || !chat) throw new EngineError(`cascade engine needs ${missing.join(', ')}`, 'cascade');
      const timeoutMs = settings.PARLEY_LLM_TIMEOUT_MS;
      return createCascadeEngine({
        stt: {
          baseUrl: settings.PARLEY_STT_BASE_URL!,
          model: settings.PARLEY_STT_MODEL,
          apiKey: settings.PARLEY_STT_API_KEY,
          timeoutMs,
        },
        tts: {
          baseUrl: settings.PARLEY_TTS_BASE_URL!,
          model: settings.PARLEY_TTS_MODEL,
          apiKey: settings.PARLEY_TTS_API_KEY,
          timeoutMs,
        },
        chat,
        voiceFor: voiceMapper(options.voices, 'cascade'),
        log,
      });
    },
  };

  // Built now, so a misconfigured engine stops start-up rather than the first conversation.
  const engines = new Map<EngineKind, SpeechEngine>();
  for (const kind of kinds) engines.set(kind, build[kind]());

  const kindFor = (vendorModel: string | null): EngineKind =>
    vendorModel !== null && vendorModel in selection.byModel
      ? selection.byModel[vendorModel as VendorModel]
      : selection.default;

  return {
    kindFor,
    engineFor: (vendorModel) => engines.get(kindFor(vendorModel))!,
  };
}
