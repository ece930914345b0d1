// The payload of a conversation's post-call job: which conversation (src/store/jobs.ts postCallJobsEnqueued).
import { z } from 'zod';

export const conversationJobPayload = z.object({ conversation_id: z.string().min(1) });
export type ConversationJobPayload = z.infer<typeof conversationJobPayload>;
