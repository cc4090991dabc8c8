-- `recon_key` as Postgres can inline it. The body of 003 appended the generation with
-- `text || integer`, an operator Postgres marks STABLE (it calls the integer's output function
-- through `anytextcat`); an IMMUTABLE SQL function whose body is less than immutable is never
-- inlined, so every key was a separate SQL-function call: ~3.5 us a row, ~0.9 s of a 100k night's
-- stock booking (250k keys). With the cast spelled out the body is immutable, the planner folds
-- it into each statement, and the keys are the same strings (tests/test_keys.py holds the rule).
CREATE OR REPLACE FUNCTION recon_key(base text, generation integer) RETURNS text
LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN generation <= 1 THEN base ELSE base || ':g' || generation::text END $$;
