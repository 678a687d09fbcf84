#!/usr/bin/env bash
# Build the fuzz targets (csrc/fuzz/, libFuzzer + ASan + UBSan) and run each
# one for a while, one after the other, then print per target: executions,
# executions per second, corpus size and what it found.
#
#   tools/fuzz.sh [SECONDS] [TARGET...]     default 60 s each, every target
#   tools/fuzz.sh 600                       the long run
#
# Corpora grow across runs in $FUZZ_WORKDIR/corpus/<target> (default
# csrc/build/fuzz/run), next to artifacts/ (inputs that crashed, leaked or
# hung: replay one with csrc/build/fuzz/fuzz_<target> <file>) and logs/.
# An input running longer than $FUZZ_TIMEOUT seconds (default 10) is a hang.
# Exit status: 0 nothing found, 1 something found, 2 could not build or run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
timeout_s=${FUZZ_TIMEOUT:-10}
work=${FUZZ_WORKDIR:-$here/csrc/build/fuzz/run}
bin=$here/csrc/build/fuzz

case "$seconds" in
  ''|*[!0-9]*|0) echo "usage: tools/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
mkdir -p "$work/corpus" "$work/artifacts" "$work/logs"
if ! make -s -j2 -C "$here/csrc" fuzz >"$work/logs/build.log" 2>&1; then
  echo "fuzz: building the targets failed (make -C csrc fuzz):" >&2
  tail -n 20 "$work/logs/build.log" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  targets=("$@")
else
  read -r -a targets <<<"$(make -s -C "$here/csrc" --no-print-directory fuzz-targets)"
fi

# Source paths as the repository names them (the harnesses include ../rtn_*.c).
tidy() {
  sed 's|/[^ ()]*/csrc/|csrc/|g; s|csrc/fuzz/\.\./|csrc/|g; s|fuzz/\.\./|csrc/|g'
}

# The innermost stack frame in our own sources: "function csrc/file.c:line".
first_frame() {
  grep -m1 -E '^ +#[0-9]+ .* in [^ ]+ [^ ]*/csrc/[^ ]*\.[ch]:[0-9]+' "$1" |
    sed -E 's/.* in ([^ ]+) ([^ ]+).*/\1 \2/' | tidy
}

# What a libFuzzer log says happened, as one short line ("ok" if nothing).
verdict() {
  local log=$1 rc=$2 line
  for pat in 'ERROR: libFuzzer: timeout' 'ERROR: LeakSanitizer' 'ERROR: libFuzzer: out-of-memory' \
             'fuzz invariant broken' 'runtime error:' 'ERROR: AddressSanitizer' \
             'ERROR: libFuzzer: deadly signal'; do
    line=$(grep -m1 -F -- "$pat" "$log" || true)
    if [ -n "$line" ]; then
      case "$pat" in
        *timeout*) echo "timeout: an input ran longer than ${timeout_s} s" ;;
        *Leak*) echo "leak: $(grep -m1 -E '^(Direct|Indirect) leak' "$log" || echo "$line")" ;;
        *out-of-memory*) echo "out of memory" ;;
        *invariant*) echo "invariant: ${line#*fuzz invariant broken: }" ;;
        *runtime*) echo "ubsan: csrc/${line#fuzz/../}" ;;	# paths are relative to csrc/
        *AddressSanitizer*)
          echo "asan: $(sed -n 's/.*ERROR: AddressSanitizer: \([^ ]*\).*/\1/p' "$log" | head -n 1)" \
               "in $(first_frame "$log")" ;;
        *) echo "crash: deadly signal" ;;
      esac
      return
    fi
  done
  if [ "$rc" -ne 0 ]; then echo "error: exit status $rc (see the log)"; else echo ok; fi
}

stat() {
  sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}

echo "fuzz: ${seconds} s per target, corpora in $work/corpus"
printf '%-14s %12s %10s %8s  %s\n' target execs exec/s corpus result
found=()
for t in "${targets[@]}"; do
  exe=$bin/fuzz_$t
  if [ ! -x "$exe" ]; then
    echo "fuzz: no target $t (known: see FUZZ_TARGETS in csrc/Makefile)" >&2
    exit 2
  fi
  log=$work/logs/$t.log
  mkdir -p "$work/corpus/$t"
  rc=0
  # the outer bound only catches libFuzzer itself getting stuck
  timeout --signal=KILL $((seconds + timeout_s + 120)) \
    "$exe" -max_total_time="$seconds" -timeout="$timeout_s" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" \
    "$work/corpus/$t" "$bin/seeds/$t" >"$log" 2>&1 || rc=$?
  result=$(verdict "$log" "$rc")
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  [ -n "$artifact" ] && result="$result (input: $artifact)"
  printf '%-14s %12s %10s %8s  %s\n' "$t" "$(stat number_of_executed_units "$log")" \
    "$(stat average_exec_per_sec "$log")" "$(find "$work/corpus/$t" -type f | wc -l)" "$result"
  [ "$result" = ok ] || found+=("$t")
done

for t in "${found[@]}"; do
  log=$work/logs/$t.log
  echo
  echo "--- $t ($log)"
  # from the first report line on: what broke and where, without libFuzzer's own frames
  awk '/fuzz invariant broken|runtime error:|==[0-9]+==ERROR|ERROR: libFuzzer/ {p = 1}
       p && !/\+0x[0-9a-f]+\)|^NOTE|^ +Combine|^$/ {print; if (/^SUMMARY/) exit}' "$log" | tidy
done
if [ ${#found[@]} -gt 0 ]; then
  echo
  echo "fuzz: ${#found[@]} of ${#targets[@]} targets found something: ${found[*]}"
  exit 1
fi
echo "fuzz: nothing found"
