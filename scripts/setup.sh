#!/usr/bin/env bash
# Fresh-machine set-up: Java for Spark, a virtual environment at .venv with the engine
# (delivery-audit) and the simulator (sim/: delivery-audit-sim, generated data and the lab).
set -euo pipefail
PY=${1:-python3.11}
VENV=${2:-.venv}
if ! command -v java >/dev/null 2>&1; then
  echo "installing a Java runtime for Spark (openjdk-17-jre-headless)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless
fi
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "error: $PY not found (Python 3.11 is required)" >&2
  exit 1
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# --no-compile: no .pyc for the ~16,600 modules installed (Airflow and its providers, Spark, GX);
# Python compiles the few thousand a run imports on first import (the set-up took 75 s with
# them compiled, about 50 s without)
"$VENV/bin/python" -m pip install -q --no-compile -e '.[airflow,dev,kafka]' -e './sim[kafka]'
# apache-airflow-providers-apache-spark pulls pyspark-client, which installs into the
# same pyspark/ folder as pyspark: reinstall pyspark last so its files win.
PYSPARK_VERSION=$("$VENV/bin/python" - <<'PYEOF'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(next(re.split("==", d)[1] for d in deps if d.startswith("pyspark==")))
PYEOF
)
"$VENV/bin/python" -m pip install -q --no-compile --force-reinstall --no-deps "pyspark==$PYSPARK_VERSION"
"$VENV/bin/python" -c "import pyspark, delivery_audit, delivery_audit_sim; print('pyspark', pyspark.__version__, 'ready')"
