-- Fencing that a woken stale attempt cannot use against the live one.
--
-- A token used to be handed to whoever asked last. A worker frozen while Temporal handed its open
-- polls a newer attempt could wake, start that (already superseded) attempt, take a newer token
-- and knock out the live attempt. Now the fence remembers which attempt holds it (workflow run,
-- activity sequence in that run, attempt): within one run, an earlier activity or attempt is
-- refused a token once a later one holds it. Across runs (a reset, an undo, a redo), the activity
-- first asks Temporal whether it is still the live attempt (activities/fences.py).

ALTER TABLE fences
    ADD COLUMN holder_run     text,
    ADD COLUMN holder_seq     bigint,
    ADD COLUMN holder_attempt integer;

-- Returns the new token, or minus the current token when the caller is stale.
CREATE FUNCTION recon_take_fence(p_scope text, p_run text, p_seq bigint, p_attempt integer)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    current fences%ROWTYPE;
    issued bigint;
BEGIN
    INSERT INTO fences (scope, token, holder_run, holder_seq, holder_attempt)
    VALUES (p_scope, 1, p_run, p_seq, p_attempt)
    ON CONFLICT (scope) DO NOTHING;
    IF FOUND THEN
        RETURN 1;
    END IF;
    SELECT * INTO current FROM fences WHERE scope = p_scope FOR UPDATE;
    IF p_run IS NOT NULL AND current.holder_run = p_run
       AND (p_seq, p_attempt) < (current.holder_seq, current.holder_attempt) THEN
        RETURN -current.token;
    END IF;
    UPDATE fences SET token = token + 1, holder_run = p_run, holder_seq = p_seq,
                      holder_attempt = p_attempt
    WHERE scope = p_scope RETURNING token INTO issued;
    RETURN issued;
END $$;
