-- The index the next appended item of a conversation takes. An append reserves its indexes by incrementing this
-- in the same statement that inserts the items (src/store/conversations.ts, appendItems): the UPDATE locks the
-- conversation's row and, under READ COMMITTED, re-reads it after waiting (PostgreSQL docs 13.2.1), so concurrent
-- appends to one conversation take turns and item_idx stays dense and ordered. A max(item_idx) + 1 read in the
-- same statement would not: its snapshot is taken before any wait.
alter table conversations add column next_item_idx integer not null default 0;

update conversations c set next_item_idx = m.next
from (select conversation_id, max(item_idx) + 1 as next from conversation_items group by conversation_id) m
where m.conversation_id = c.id;
