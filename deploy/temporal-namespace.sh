#!/bin/sh
# The namespace and recon's search attributes. Each is created only when missing, and any other
# failure stops the setup (nothing is ignored): the worker must never start against a half-made namespace.
set -eu
NS=${TEMPORAL_NAMESPACE:-default}
ADDR=${TEMPORAL_ADDRESS:?}
tries=0
until temporal operator cluster health --address "$ADDR" | grep -q SERVING; do
  tries=$((tries + 1)); [ "$tries" -lt 60 ] || { echo "Temporal not serving at $ADDR"; exit 1; }
  sleep 2
done
if ! temporal operator namespace describe --address "$ADDR" --namespace "$NS" >/dev/null 2>&1; then
  temporal operator namespace create --address "$ADDR" --namespace "$NS" --retention 30d
fi
existing=$(temporal operator search-attribute list --address "$ADDR" --namespace "$NS")
for attr in ReconStatus ReconStep ReconWarehouse ReconDate; do
  if ! printf '%s\n' "$existing" | grep -qw "$attr"; then
    temporal operator search-attribute create --address "$ADDR" --namespace "$NS" \
      --name "$attr" --type Keyword
  fi
done
echo "namespace $NS and search attributes ready"
