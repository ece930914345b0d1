// Stored conversations of a workspace: reading one or a page of a project's, their extractions, cancelling one in
// progress, and deleting a finished one's content (its transcripts and recordings, the files included).
import { unlink } from 'node:fs/promises';
import type { Settings } from '../config.js';
import { recordingPath } from '../media/recording.js';
import type { ConversationExtraction, RecordingSide } from '../schemas/conversations.js';
import {
  cancelConversation as cancelStored,
  deleteConversationContent as deleteStoredContent,
  getConversation,
  getRecording,
  listConversations,
  listExtractions,
  type ListFilter,
  type RecordingRow,
  type StoredConversation,
} from '../store/conversations.js';
import type { Sql } from '../store/db.js';
import type { DomainContext } from './context.js';
import { conflict, forbidden, notFound } from './errors.js';
import { resolveProject } from './projects.js';
import { rerunExtraction } from '../jobs/extraction.js';
import { nodeMetrics } from '../metrics/node.js';

/** The conversation `id` of the workspace; not_found when missing, forbidden when another workspace's. */
export async function ownedConversation(sql: Sql, orgId: string, id: string): Promise<StoredConversation> {
  const found = await getConversation(sql, id);
  if (!found) throw notFound('conversation', id);
  if (found.orgId !== orgId) throw forbidden('conversation belongs to another workspace');
  return found;
}

/**
 * Runs the extraction job of an ended conversation again now (its results replace each schema's earlier
 * extraction); conflict `conversation_in_progress` while it is live.
 */
export async function rerunConversationExtraction(sql: Sql, orgId: string, id: string): Promise<void> {
  const c = await ownedConversation(sql, orgId, id);
  if (c.state !== 'ended')
    throw conflict('the conversation is in progress: extraction runs once it ends', 'conversation_in_progress');
  await rerunExtraction(sql, id);
}

/** A page of the project's conversations (newest first) and its cursors; not_found for an unknown cursor. */
export async function listProjectConversations(
  sql: Sql,
  orgId: string,
  query: Omit<ListFilter, 'projectId'> & { project: string },
): Promise<{ conversations: StoredConversation[]; prev_cursor: string | null; next_cursor: string | null }> {
  const project = await resolveProject(sql, orgId, query.project);
  const page = await listConversations(sql, { ...query, projectId: project.id });
  if (page.kind === 'cursor_not_found') throw notFound('conversation', page.cursor);
  return page;
}

/** The extractions made from the workspace's conversation `id` (ownedConversation's errors). */
export async function conversationExtractions(sql: Sql, orgId: string, id: string): Promise<ConversationExtraction[]> {
  await ownedConversation(sql, orgId, id);
  return listExtractions(sql, id);
}

/** Ends the workspace's conversation in progress (`user_canceled`); conflict `conversation_ended` once it has ended. */
export async function cancelConversation(sql: Sql, orgId: string, id: string): Promise<void> {
  await ownedConversation(sql, orgId, id);
  const out = await cancelStored(sql, id);
  if (out === 'not_found') throw notFound('conversation', id);
  if (out === 'already_ended') throw conflict('the conversation has already ended', 'conversation_ended');
  nodeMetrics.conversationsEnded.inc({ ended_by: 'user_canceled' });
}

/**
 * Deletes the content of the workspace's finished conversation: transcripts and recordings, files included (the
 * record stays, saying when). Conflict `conversation_in_progress` while it runs: cancel it first.
 */
export async function deleteConversationContent(ctx: DomainContext, orgId: string, id: string): Promise<void> {
  await ownedConversation(ctx.sql, orgId, id);
  const out = await deleteStoredContent(ctx.sql, id);
  if (out.kind === 'not_found') throw notFound('conversation', id);
  if (out.kind === 'in_progress')
    throw conflict('the conversation is in progress: cancel it first', 'conversation_in_progress');
  await removeRecordingFiles(ctx.settings, out.recordings);
}

/**
 * The stored recording of one side of a conversation, or null. No workspace check: its caller holds a link the
 * control plane signed for it.
 */
export async function storedRecording(
  sql: Sql,
  conversationId: string,
  side: RecordingSide,
): Promise<RecordingRow | null> {
  return getRecording(sql, conversationId, side);
}

/** Removes the files of deleted recordings; a file already gone is not an error. */
async function removeRecordingFiles(settings: Pick<Settings, 'PARLEY_DATA_DIR'>, rows: RecordingRow[]): Promise<void> {
  for (const r of rows) {
    try {
      await unlink(recordingPath(settings.PARLEY_DATA_DIR, r.path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}
