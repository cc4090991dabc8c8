-- Mandates (docs/design.md §3, "Mandates: no money moves on Temporal access alone"). Every
-- activity that moves money asks Postgres, in the transaction that moves it, whether a legitimate
-- run would move it now. The answer is read from rows only the checks write: a verified
-- signature's use (`spent_signatures`), the gate's own outcome (`gate_outcomes`), and which use
-- opened a generation (`run_generations.authority`). Never from who called (a workflow id, a
-- parent's id, a task queue: all of them are whatever the caller says).

-- What a verified signature's use authorises. `night`: whose rows it acts on; `generation`: the
-- night's generation when it was first used (a use is tied to it: the same signature in a later
-- generation is another use, refused); `scope`: an undo's scope as its workflow id spells it
-- (`keys.undo_workflow_id`), for an undo request or an `undo` decision; `supplier_id`: a redo's
-- or a decision's supplier (NULL: the whole night); `decision` and `handover_no`: what a decision
-- decided and where; `taken`: false for the first of two approvals (four eyes), which authorises
-- nothing by itself. Rows spent before this migration carry NULLs and authorise nothing.
ALTER TABLE spent_signatures
    ADD COLUMN night       text,
    ADD COLUMN generation  integer,
    ADD COLUMN scope       text,
    ADD COLUMN supplier_id text,
    ADD COLUMN decision    text,
    ADD COLUMN handover_no integer,
    ADD COLUMN taken       boolean NOT NULL DEFAULT true;
CREATE INDEX spent_signatures_of_night ON spent_signatures (night, purpose, generation)
    WHERE night IS NOT NULL;

-- Which undo authority opened a generation: one generation per authorised undo, however often
-- its workflow is retried, reset or called by name.
ALTER TABLE run_generations ADD COLUMN authority bytea UNIQUE;

-- The gate's own verdict per night, generation and scope ('' = the whole night), written only
-- by `check_evidence` from what it read: debit notes go out on a passed one, or on a verified one
-- that a person's signed `resume` at the gate overrode.
CREATE TABLE gate_outcomes (
    night       text NOT NULL,
    generation  integer NOT NULL,
    scope       text NOT NULL,
    verified    boolean NOT NULL,  -- ledger and stock held what the night calls for
    passed      boolean NOT NULL,  -- and no reason to hold
    checked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (night, generation, scope)
);
