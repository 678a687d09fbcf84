#!/usr/bin/env bash
# The two entry points of the README: install everything, then run the demo or the tests.
#   bash tools/run.sh demo [rtnetctl lab up options]
#   bash tools/run.sh test [pytest options]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-}
shift || true

bash "$here/tools/setup-system.sh"
cd "$here"
case "$what" in
  demo)
    exec rtnetctl lab up "$@"
    ;;
  test)
    exec python3 -m pytest -q tests "$@"
    ;;
  *)
    echo "usage: bash tools/run.sh demo|test [options]" >&2
    exit 2
    ;;
esac
