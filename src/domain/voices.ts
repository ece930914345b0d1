// The voice catalog: PARLEY_VOICES_FILE (a JSON array of voices) when set, else the shipped one. Agents, outbound
// calls and the speech engines name voices by the catalog's ids.
import { readFileSync } from 'node:fs';
import type { Settings } from '../config.js';
import { DEFAULT_VOICES, voiceCatalog as catalogSchema, type CatalogVoice } from '../schemas/voices.js';

type VoiceSettings = Pick<Settings, 'PARLEY_VOICES_FILE'>;

/** Reads the catalog the settings name; throws naming the file when it is not a valid catalog. */
export function loadVoiceCatalog(settings: VoiceSettings): CatalogVoice[] {
  const file = settings.PARLEY_VOICES_FILE;
  if (!file) return DEFAULT_VOICES;
  const parsed = catalogSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`PARLEY_VOICES_FILE ${file}: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}`);
  }
  return parsed.data;
}

/** Loaded catalogs by settings object: the file is read once per server, when first needed (at start-up). */
const loaded = new WeakMap<VoiceSettings, { voices: CatalogVoice[]; ids: Set<string> }>();

function catalogOf(settings: VoiceSettings) {
  let c = loaded.get(settings);
  if (!c) {
    const voices = loadVoiceCatalog(settings);
    c = { voices, ids: new Set(voices.map((v) => v.id)) };
    loaded.set(settings, c);
  }
  return c;
}

/** The catalog of a server's settings, loaded once (loadVoiceCatalog's errors the first time). */
export function voiceCatalog(settings: VoiceSettings): readonly CatalogVoice[] {
  return catalogOf(settings).voices;
}

/** Whether the catalog has a voice of that id. */
export function hasVoice(settings: VoiceSettings, id: string): boolean {
  return catalogOf(settings).ids.has(id);
}
