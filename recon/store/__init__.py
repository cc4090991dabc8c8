"""Every SQL statement of the product, one module per entity (docs/architecture.md, "Rooms and layers").

Nothing outside this package talks SQL: activities, command services and the CLI call these
functions, so the invariant each statement enforces is stated once, next to the statement.
"""
