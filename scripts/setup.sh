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
# --no-compile here, one parallel compileall at the end (below): pip compiles module by module
# on one core (the set-up took 75 s so, about 50 s without)
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
# The bytecode of every module, written once now on both cores (~21 s): where
# PYTHONDONTWRITEBYTECODE is set (our machines' environment sets it) Python never writes a .pyc, so
# without these every process compiled what it imports, every time: GX's import alone took
# 9.2 s against 4.0 s from bytecode, a cold 20k-message `delivery-audit run` 41-44 s against 38 s
SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_path('purelib'))")
"$VENV/bin/python" -m compileall -q -j 0 "$SITE" src sim/src >/dev/null \
  || echo "note: some modules have no bytecode (compiled in memory when imported)"
"$VENV/bin/python" -c "import pyspark, delivery_audit, delivery_audit_sim; print('pyspark', pyspark.__version__, 'ready')"
