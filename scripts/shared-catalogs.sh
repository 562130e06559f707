# Sourced by the catalog benches: the two large third-party catalogs of the shared data
# ($OPCAT_SHARED_DATA, default ../shared/data relative to the checkout). Sets `certified` and
# `community` to their directories and exits with a message when either is missing.
data="${OPCAT_SHARED_DATA:-../shared/data}"
certified="$data/fbc/large/certified-operators/catalogs/v4.16"
community="$data/fbc/large/community-operators-prod/catalogs/v4.21"
for dir in "$certified" "$community"; do
  [ -d "$dir" ] || { echo "catalog not found: $dir (set OPCAT_SHARED_DATA)" >&2; exit 1; }
done
