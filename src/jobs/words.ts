// The post-call transcript from the words of both sides: each word goes to the item of its side whose time span
// holds it (items are the live turns), the items' texts are their words, and the record's transcript is a line per
// turn in time order, `user: ...` / `assistant: ...` as the live transcript is written.
import type { ItemSpan, PostCallWord } from '../store/post-call.js';

/** A word no item of its side spans goes to the nearest one within this distance (turn edges are approximate). */
export const ITEM_MATCH_TOLERANCE_MS = 1500;
/** Words of no item split into lines at pauses longer than this. */
export const LINE_GAP_MS = 1000;

/** An item on the recording's timeline (ms from its start). */
export interface TimelineItem {
  id: string;
  role: 'user' | 'assistant';
  startMs: number;
  endMs: number;
}

/** The items placed on the recording's timeline, which began at `recordingStartMs` (epoch ms). */
export function itemsOnTimeline(items: readonly ItemSpan[], recordingStartMs: number): TimelineItem[] {
  return items.map((i) => {
    const startMs = new Date(i.started_at).getTime() - recordingStartMs;
    return { id: i.id, role: i.role, startMs, endMs: startMs + i.duration_ms };
  });
}

/** How far `ms` lies outside [start, end] (0 inside). */
function distance(ms: number, item: TimelineItem): number {
  if (ms < item.startMs) return item.startMs - ms;
  if (ms > item.endMs) return ms - item.endMs;
  return 0;
}

/**
 * Each word with the item of its side that spans its middle, else the nearest within ITEM_MATCH_TOLERANCE_MS, else
 * none (speech no turn was made of: it is still in the record's transcript). Sorted by time.
 */
export function assignWords(
  words: readonly Omit<PostCallWord, 'item_id'>[],
  items: readonly TimelineItem[],
): PostCallWord[] {
  const out = words.map((w) => {
    const mid = (w.start_ms + w.end_ms) / 2;
    let best: TimelineItem | null = null;
    let bestDistance = Infinity;
    for (const item of items) {
      if (item.role !== w.role) continue;
      const d = distance(mid, item);
      if (d < bestDistance) {
        best = item;
        bestDistance = d;
      }
    }
    return { ...w, item_id: best && bestDistance <= ITEM_MATCH_TOLERANCE_MS ? best.id : null };
  });
  return out.sort((a, b) => a.start_ms - b.start_ms || a.end_ms - b.end_ms);
}

/** Each item's text: its words in order, or null when no word fell in it. */
export function itemTexts(
  words: readonly PostCallWord[],
  items: readonly { id: string }[],
): { id: string; text: string | null }[] {
  const byItem = new Map<string, string[]>();
  for (const w of words) {
    if (w.item_id === null) continue;
    const list = byItem.get(w.item_id) ?? [];
    list.push(w.word);
    byItem.set(w.item_id, list);
  }
  return items.map((i) => ({ id: i.id, text: byItem.get(i.id)?.join(' ') ?? null }));
}

/**
 * The record's transcript: a line per item that has words, and per run of a side's words of no item (split at
 * pauses over LINE_GAP_MS), ordered by their first word; null when there are no words. `words` sorted by time.
 */
export function transcriptText(words: readonly PostCallWord[]): string | null {
  const lines: { role: string; startMs: number; words: string[] }[] = [];
  const ofItem = new Map<string, (typeof lines)[number]>();
  const lastLoose: Partial<Record<PostCallWord['role'], { line: (typeof lines)[number]; endMs: number }>> = {};
  for (const w of words) {
    if (w.item_id !== null) {
      let line = ofItem.get(w.item_id);
      if (!line) {
        line = { role: w.role, startMs: w.start_ms, words: [] };
        ofItem.set(w.item_id, line);
        lines.push(line);
      }
      line.words.push(w.word);
      continue;
    }
    const loose = lastLoose[w.role];
    if (loose && w.start_ms - loose.endMs <= LINE_GAP_MS) {
      loose.line.words.push(w.word);
      loose.endMs = w.end_ms;
      continue;
    }
    const line = { role: w.role, startMs: w.start_ms, words: [w.word] };
    lines.push(line);
    lastLoose[w.role] = { line, endMs: w.end_ms };
  }
  if (lines.length === 0) return null;
  return lines
    .sort((a, b) => a.startMs - b.startMs)
    .map((l) => `${l.role}: ${l.words.join(' ')}`)
    .join('\n');
}
