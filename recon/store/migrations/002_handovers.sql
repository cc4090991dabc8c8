-- A handover is the run asking a person to decide. The note holds the evidence; the decision,
-- who made it and when are recorded on the same row.
CREATE TABLE handovers (
    workflow_id   text    NOT NULL,
    handover_no   integer NOT NULL,
    step          text    NOT NULL,
    error_type    text    NOT NULL,
    error_message text    NOT NULL,
    attempts      integer NOT NULL,
    posted        jsonb   NOT NULL,
    next_action   text    NOT NULL,
    note          text    NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    decision      text CHECK (decision IN ('resume', 'retry', 'undo')),
    decided_by    text,
    decision_note text,
    decided_at    timestamptz,
    PRIMARY KEY (workflow_id, handover_no)
);
CREATE INDEX handovers_pending ON handovers (created_at) WHERE decision IS NULL;
