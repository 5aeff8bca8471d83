#!/usr/bin/env bash
# Mutation testing of ONE source file against chosen tests, with mutmut 3, in a throwaway copy.
#
#   benchmarks/mutation.sh [FILE TEST...]
#   benchmarks/mutation.sh                   # core/formats/safe_pickle.py with the pickle tests
#   benchmarks/mutation.sh core/bytes_unicode.py tests/test_tokenizer.py
#
# mutmut 3 takes its settings from [tool.mutmut] in pyproject.toml (or [mutmut] in setup.cfg)
# and copies the project into ./mutants/. So that the working tree (shared with others) is never
# touched, this copies core/, tests/ and pyproject.toml into a temporary folder, appends a
# [tool.mutmut] section to THAT copy's pyproject.toml, runs mutmut there, prints every mutant's
# status and the diff of each survivor, and deletes the folder (mutants/ included) on exit.
#
# Needs mutmut 3 in the venv: .venv/bin/pip install 'mutmut>=3,<4'. MUTATION_JOBS sets the
# number of parallel workers (default 2). mutmut only mutates code inside functions and
# methods, not module-level constants such as an allowlist: pin those with exact tests.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
if (($# == 0)); then
    set -- core/formats/safe_pickle.py tests/test_safe_pickle_gadgets.py tests/test_formats_pickle.py
elif (($# == 1)); then
    echo "usage: $0 [FILE TEST...]  (name the tests that exercise FILE)" >&2
    exit 2
fi
file=$1
tests=("${@:2}")
mutmut=$repo/.venv/bin/mutmut
[[ -x $mutmut ]] || { echo "mutmut is missing: $repo/.venv/bin/pip install 'mutmut>=3,<4'" >&2; exit 2; }
[[ -f $repo/$file ]] || { echo "no such file: $file" >&2; exit 2; }
[[ $file == core/* ]] || { echo "only files under core/ are copied: $file" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/mutation.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$repo" --exclude=__pycache__ --exclude='*.pyc' -cf - core tests pyproject.toml \
    | tar -C "$work" -xf -

toml_list() { local out="" x; for x in "$@"; do out+="\"$x\", "; done; echo "[${out%, }]"; }
cat >>"$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["core"]
only_mutate = ["$file"]
pytest_add_cli_args_test_selection = $(toml_list "${tests[@]}")
pytest_add_cli_args = ["-p", "no:cacheprovider"]
use_git_change_detection = false
EOF

cd "$work"
echo "mutating $file; tests: ${tests[*]}"
"$mutmut" run --max-children "${MUTATION_JOBS:-2}" >"$work/run.log" 2>&1 || {
    tail -40 "$work/run.log"
    echo "mutmut run failed (log above)" >&2
    exit 1
}
tail -3 "$work/run.log" | tr '\r' '\n' | tail -2

"$mutmut" results --all true >"$work/results.txt"
echo
echo "status counts:"
awk -F': ' 'NF == 2 {print $2}' "$work/results.txt" | sort | uniq -c
echo
echo "every mutant:"
sed 's/^ *//' "$work/results.txt"
survivors=$(awk -F': ' '$2 != "killed" && NF == 2 {gsub(/^ +/, "", $1); print $1}' "$work/results.txt")
for name in $survivors; do
    echo
    "$mutmut" show "$name"
done
