-- A mailbox source may move the messages it filed to a folder of the mailbox (`recon source add
-- ... --file-to recon-unreadable`), and only after the import that filed them has committed.
-- `moved_to` is written after the server moved them: a filed message of such a source without it
-- is still to be moved, and the next fetch (a retry after a kill, or the next night) moves it.
ALTER TABLE source_items ADD COLUMN moved_to text;
CREATE INDEX source_items_to_move ON source_items (source_id, uidvalidity)
    WHERE outcome = 'filed' AND uid IS NOT NULL AND moved_to IS NULL;
