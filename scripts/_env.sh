# Shared by scripts/start and scripts/test: make sure .venv exists and holds this project
# with the extras named in $VENV_EXTRAS, reinstalling only when pyproject.toml changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV_DIR:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "creating virtualenv in $VENV" >&2
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
extras="${VENV_EXTRAS:-}"
stamp="$VENV/.trio-broker-installed"
want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1) extras=$extras"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "installing trio-broker${extras:+[$extras]} into $VENV" >&2
    spec="$ROOT"
    [ -n "$extras" ] && spec="$ROOT[$extras]"
    "$VENV/bin/python" -m pip install --quiet -e "$spec"
    echo "$want" > "$stamp"
fi
