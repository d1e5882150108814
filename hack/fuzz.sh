#!/usr/bin/env bash
# fuzz.sh runs every native Go fuzz target of the tree for FUZZTIME each (default 3s), one
# `go test -fuzz` per target (go test fuzzes one target per invocation). A crash stops the run;
# go writes the failing input under the package's testdata/fuzz/<Name>/, to be kept with the fix.
# Usage: hack/fuzz.sh [regexp]   (env: FUZZTIME=3s; regexp selects targets by "pkg Name")
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
FUZZTIME=${FUZZTIME:-3s}
# Each line: package, target. Keep in step with the Fuzz functions (make fuzz checks it below).
targets="
./pkg/registry FuzzParse
./pkg/registry FuzzParseQuery
./pkg/registry FuzzParseExternalValue
./pkg/registry FuzzExternalNaming
./pkg/registry FuzzNewIndex
./pkg/zonedb FuzzDecodeShards
./pkg/zonedb FuzzDecodeShardText
./pkg/dnsserver FuzzQuery
./pkg/source FuzzParseAnnotations
./pkg/gslb FuzzPeerAnswer
./pkg/gslb FuzzParsePeers
./pkg/gslb/health FuzzDecode
./pkg/plan FuzzCompute
./pkg/provider/webhook FuzzNormalize
"
listed=$(awk 'NF {print $2}' <<<"$targets" | sort)
found=$(git ls-files -z -- '*_test.go' | xargs -0 grep -hoE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' |
  sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | sort)
if [[ "$listed" != "$found" ]]; then
  echo "hack/fuzz.sh: its target list differs from the Fuzz functions of the tree:" >&2
  diff <(echo "$listed") <(echo "$found") >&2 || true
  exit 1
fi
# go test reads -fuzztime 0 as "no limit": 0 here means no fuzzing at all.
if [[ "$FUZZTIME" =~ ^0+[a-z]*$ ]]; then
  echo "hack/fuzz.sh: FUZZTIME=$FUZZTIME: no fuzzing"
  exit 0
fi
while read -r pkg name; do
  [[ -n "$pkg" ]] || continue
  if [[ $# -gt 0 ]] && ! [[ "$pkg $name" =~ $1 ]]; then continue; fi
  echo "== $pkg $name ($FUZZTIME)"
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"
done <<<"$targets"
