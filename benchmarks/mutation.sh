#!/usr/bin/env bash
# Mutation testing of ONE source file against chosen tests, with mutmut 3, in a throwaway copy.
#
#   benchmarks/mutation.sh [FILE TEST...]
#   benchmarks/mutation.sh                   # core/engine/safe_pickle.py with the pickle tests
#   benchmarks/mutation.sh core/engine/bytes_unicode.py tests/test_tokenizer.py
#   benchmarks/mutation.sh ui/chips.py tests/test_escaping.py tests/test_ui_chips.py
#
# FILE is a .py file under core/, training/ or ui/. TEST... are pytest arguments (files, node
# IDs, or options such as -k EXPR), used both for the clean run and for each mutant.
#
# mutmut 3 takes its settings from [tool.mutmut] in pyproject.toml (or [mutmut] in setup.cfg)
# and copies the project into ./mutants/. So that the working tree (shared with others) is never
# touched, this copies core/, training/, ui/, tests/, pyproject.toml and what the AppTest page
# tests open (app.py, pages/, .streamlit/config.toml; never secrets.toml) into a temporary
# folder, appends a [tool.mutmut] section to THAT copy's pyproject.toml, runs mutmut there,
# prints every mutant's status and the diff of each survivor, and deletes the folder (mutants/
# included) on exit. core/, training/ and ui/ are all source_paths (tests import any of them
# from mutants/, never from the working tree), but only FILE is mutated.
#
# Needs mutmut 3 in the venv: .venv/bin/pip install 'mutmut>=3,<4'. MUTATION_JOBS sets the
# number of parallel workers (default 2). MUTATION_MUTANTS (optional, space-separated names or
# fnmatch globs as printed below, e.g. 'core.engine.tokenizer.x__id_list__mutmut_*') tests only
# those mutants, to re-check survivors quickly; the others then show as "not checked".
# mutmut only mutates code inside functions and methods, not module-level constants such as
# an allowlist: pin those with exact tests.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
if (($# == 0)); then
    set -- core/engine/safe_pickle.py tests/test_safe_pickle_gadgets.py tests/test_formats_pickle.py
elif (($# == 1)); then
    echo "usage: $0 [FILE TEST...]  (name the tests that exercise FILE)" >&2
    exit 2
fi
file=$1
tests=("${@:2}")
mutmut=$repo/.venv/bin/mutmut
[[ -x $mutmut ]] || { echo "mutmut is missing: $repo/.venv/bin/pip install 'mutmut>=3,<4'" >&2; exit 2; }
[[ -f $repo/$file ]] || { echo "no such file: $file" >&2; exit 2; }
[[ $file == core/*.py || $file == training/*.py || $file == ui/*.py ]] ||
    { echo "FILE must be a .py file under core/, training/ or ui/: $file" >&2; exit 2; }

# What the copy holds: the packages, the tests, the config; and, where they exist, the files
# the Streamlit AppTest page tests open (they resolve app.py and pages/ from tests/..).
copy=(core tests pyproject.toml)
for extra in training ui app.py pages .streamlit/config.toml; do
    if [[ -e $repo/$extra ]]; then copy+=("$extra"); fi
done
sources=(core)
for package in training ui; do
    if [[ -d $repo/$package ]]; then sources+=("$package"); fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/mutation.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$repo" --exclude=__pycache__ --exclude='*.pyc' --exclude=.hypothesis -cf - "${copy[@]}" \
    | tar -C "$work" -xf -

toml_list() {  # a TOML array of basic strings (backslashes and quotes escaped)
    local out="" x
    for x in "$@"; do x=${x//\\/\\\\}; out+="\"${x//\"/\\\"}\", "; done
    echo "[${out%, }]"
}
cat >>"$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = $(toml_list "${sources[@]}")
only_mutate = ["$file"]
also_copy = ["app.py", "pages", ".streamlit"]
pytest_add_cli_args_test_selection = $(toml_list "${tests[@]}")
pytest_add_cli_args = ["-p", "no:cacheprovider"]
use_git_change_detection = false
EOF

cd "$work"
read -ra only <<<"${MUTATION_MUTANTS:-}"
echo "mutating $file; tests: ${tests[*]}${only[*]:+; only the ${#only[@]} mutant name(s) in MUTATION_MUTANTS}"
"$mutmut" run --max-children "${MUTATION_JOBS:-2}" "${only[@]}" >"$work/run.log" 2>&1 || {
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
survivors=$(awk -F': ' 'NF == 2 && $2 != "killed" && $2 != "not checked" {gsub(/^ +/, "", $1); print $1}' \
    "$work/results.txt")
for name in $survivors; do
    echo
    "$mutmut" show "$name"
done
