// Shapes shared by the conversations repository's writing (conversations.ts) and reading (conversation-reads.ts)
// sides; conversations.ts re-exports them.
import type { RecordingSide } from '../schemas/conversations.js';

/** The record's configuration fields (what the agent and overrides resolved to), stored under their own names. */
export type SettingsField =
  | 'model'
  | 'generate_welcome_message'
  | 'is_welcome_message_interruptible'
  | 'listen_only'
  | 'welcome_message'
  | 'template_variables'
  | 'input_format'
  | 'output_format'
  | 'background_noise_level'
  | 'background_noise'
  | 'boosted_keywords'
  | 'pronunciation_dictionary'
  | 'min_words_to_interrupt'
  | 'default_language'
  | 'additional_languages'
  | 'multilingual_mode'
  | 'push_to_talk'
  | 'no_input_poke_sec'
  | 'no_input_end_conversation_sec'
  | 'no_input_poke_text'
  | 'system_prompt'
  | 'generate_no_input_poke_text'
  | 'websocket_timeout_sec'
  | 'vad_prebuffer_duration_ms'
  | 'vad_min_speech_duration_ms'
  | 'vad_min_silence_duration_ms'
  | 'vad_threshold'
  | 'metadata'
  | 'enable_watermarking'
  | 'data_retention_policy'
  | 'enable_assistant_backchannel'
  | 'assistant_backchannel_aggressiveness'
  | 'languages';

export type ConversationState = 'created' | 'configuring' | 'ready' | 'active' | 'ended';

export interface NewRecording {
  side: RecordingSide;
  /** Relative to PARLEY_DATA_DIR/recordings. */
  path: string;
  format: 'wav' | 'wav.gz';
  sample_rate: number;
  channels: number;
  bytes: number;
  /** Stored as `wav` while its gzip is pending: the format wanted (cleared when the row moves to the gzip). */
  compress_to?: 'wav.gz' | null;
}

export interface RecordingRow extends NewRecording {
  conversation_id: string;
}
