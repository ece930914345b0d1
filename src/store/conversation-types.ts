// Shapes shared by the conversations repository's writing (conversations.ts) and reading (conversation-reads.ts)
// sides; conversations.ts re-exports them.
import type { RecordingSide } from '../schemas/conversations.js';

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
