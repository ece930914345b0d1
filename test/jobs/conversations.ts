// Ended conversations for the post-call tests, stored as the live side stores them: created, items appended, then
// finished with their recording (which enqueues the post-call jobs).
import {
  createConversation,
  finishConversation,
  type ConversationSettings,
  type NewItem,
  type NewRecording,
} from '../../src/store/conversations.js';
import type { EndedBy } from '../../src/schemas/conversations.js';
import type { TestServer } from '../helpers/server.js';
import { writeRecording } from './recordings.js';

export interface EndedConversation {
  startedAt: Date;
  endedAt: Date;
  endedBy?: EndedBy;
  items?: NewItem[];
  liveTranscript?: string | null;
  settings?: ConversationSettings;
  /** A stereo WAV stored as the conversation's recording. */
  recording?: { wav: Buffer; format?: 'wav' | 'wav.gz'; sampleRate: number };
  orgId?: string;
  projectId?: string;
}

let count = 0;

/** Stores an ended conversation; returns its id. */
export async function storeEndedConversation(server: TestServer, c: EndedConversation): Promise<string> {
  const id = await createConversation(server.sql, {
    orgId: c.orgId ?? server.orgId,
    projectId: c.projectId ?? server.projectId,
    origin: 'web',
    state: 'active',
    started_at: c.startedAt,
    settings: c.settings,
    items: c.items,
  });
  const recordings: NewRecording[] = [];
  if (c.recording) {
    const format = c.recording.format ?? 'wav';
    const path = writeRecording(server.settings.PARLEY_DATA_DIR, `${id}-${count++}`, c.recording.wav, format);
    recordings.push({
      side: 'both',
      path,
      format,
      sample_rate: c.recording.sampleRate,
      channels: 2,
      bytes: c.recording.wav.length,
    });
  }
  await finishConversation(
    server.sql,
    id,
    {
      ended_by: c.endedBy ?? 'user',
      ended_at: c.endedAt,
      duration_ms: c.endedAt.getTime() - c.startedAt.getTime(),
      live_transcript: c.liveTranscript ?? null,
    },
    recordings,
  );
  return id;
}
