// Voices (/v1/voices): a configurable catalog, each voice mapped to a voice of each engine.
import { z } from 'zod';

/** A voice's `audio_url` (its sample) is valid 7 days. */
export const VOICE_SAMPLE_TTL_SECONDS = 7 * 24 * 3600;

export const voiceId = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'must be a short lowercase word');

/** One catalog entry: what the API shows, plus the voice each engine speaks it with. */
export const catalogVoice = z
  .object({
    id: voiceId,
    name: z.string().min(1).max(100),
    description: z.string().max(1000).nullable(),
    /** Engine name -> that engine's voice (`echo`: an espeak-ng voice; OpenAI-compatible engines: a voice name). */
    engines: z.record(z.string(), z.string().min(1)),
    /** Text of the sample recording. */
    sample_text: z.string().min(1).max(500).optional(),
  })
  .strict();
export type CatalogVoice = z.infer<typeof catalogVoice>;

export const voiceCatalog = z
  .array(catalogVoice)
  .min(1)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((v, i) => {
      if (seen.has(v.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate voice id '${v.id}'` });
      seen.add(v.id);
    });
  });

/** The shipped catalog (PARLEY_VOICES_FILE replaces it). */
export const DEFAULT_VOICES: CatalogVoice[] = [
  {
    id: 'grant',
    name: 'Grant',
    description: 'Calm, warm male voice with an American accent.',
    engines: { echo: 'en-us+m3', 'openai-realtime': 'ash', cascade: 'onyx' },
  },
  {
    id: 'sabrina',
    name: 'Sabrina',
    description: 'Bright, friendly female voice with an American accent.',
    engines: { echo: 'en-us+f3', 'openai-realtime': 'shimmer', cascade: 'nova' },
  },
  {
    id: 'oliver',
    name: 'Oliver',
    description: 'Measured male voice with a British accent.',
    engines: { echo: 'en-gb+m1', 'openai-realtime': 'echo', cascade: 'fable' },
  },
  {
    id: 'maya',
    name: 'Maya',
    description: 'Clear, upbeat female voice.',
    engines: { echo: 'en-us+f2', 'openai-realtime': 'coral', cascade: 'alloy' },
  },
  {
    id: 'arthur',
    name: 'Arthur',
    description: 'Deep, steady male voice.',
    engines: { echo: 'en-us+m1', 'openai-realtime': 'verse', cascade: 'echo' },
  },
  {
    id: 'fiona',
    name: 'Fiona',
    description: 'Soft female voice with a Scottish accent.',
    engines: { echo: 'en-gb-scotland+f4', 'openai-realtime': 'sage', cascade: 'shimmer' },
  },
];

export const voice = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  audio_url: z.string().describe('signed link to a sample recording, valid 7 days'),
});
export const voiceBody = z.object({ voice });
export const voicesBody = z.object({ voices: z.array(voice) });
export const voiceParams = z.object({ id: z.string().min(1).max(64) });
