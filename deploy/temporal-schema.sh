#!/bin/sh
# Create Temporal's two databases and bring their schemas to the versions this image ships.
# Safe to run again: `create` is skipped for a database that exists, update-schema is idempotent.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${POSTGRES_PWD:?}"
SCHEMA=/etc/temporal/schema/postgresql/v12
sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p 5432 --pw "$POSTGRES_PWD" "$@"; }
for db in temporal:temporal temporal_visibility:visibility; do
  name=${db%%:*}; dir=${db##*:}
  if ! PGPASSWORD="$POSTGRES_PWD" psql -h "$POSTGRES_SEEDS" -U "$POSTGRES_USER" -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
    sql --db "$name" create
    sql --db "$name" setup-schema -v 0.0
  fi
  sql --db "$name" update-schema -d "$SCHEMA/$dir/versioned"
done
echo "temporal schemas ready"
