"""Activities touch the outside world (Postgres, the model, the outbox); workflows only decide."""
