#!/usr/bin/env bash
# Run the daily audit DAG end to end on this machine: Airflow 3 on SQLite, Spark local[*].
#
#   scripts/airflow_demo.sh [DAY]        # DAY = the UTC day to audit, default 2026-11-19
#
# Generates a "mixed" day with `delivery-audit generate`, lays it out as the DAG expects
# (<data>/<source>/dt=<day>/part-*.jsonl), then `airflow dags test delivery_audit_daily <DAY+1>`
# (a data-interval DAG run for logical date D audits [D-1, D)). Everything lives in the
# checkout: AIRFLOW_HOME=.airflow, data and reports under demo/airflow (both gitignored).
# Env: MESSAGES (default 20000), SEED (default 7), SPARK_MASTER (default local[*]),
#      KEEP_DATA=1 to reuse already generated data.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_BIN="${VENV_BIN:-$REPO/.venv/bin}"
DAY="${1:-${DAY:-2026-11-19}}"
MESSAGES="${MESSAGES:-20000}"
SEED="${SEED:-7}"
DEMO="$REPO/demo/airflow"
DATA="$DEMO/data"
REPORTS="$DEMO/reports"
NEXT_DAY="$("$VENV_BIN/python" -c 'import sys,datetime as d; print(d.date.fromisoformat(sys.argv[1]) + d.timedelta(days=1))' "$DAY")"

export PATH="$VENV_BIN:$PATH"
export AIRFLOW_HOME="$REPO/.airflow"
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$REPO/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__LOGGING__BASE_LOG_FOLDER="$AIRFLOW_HOME/logs"
export AIRFLOW_CONN_SPARK_DEFAULT="{\"conn_type\": \"spark\", \"host\": \"${SPARK_MASTER:-local[*]}\"}"
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$VENV_BIN/python"
export PYSPARK_DRIVER_PYTHON="$VENV_BIN/python"
export DELIVERY_AUDIT_RETRY_DELAY_SECONDS="${DELIVERY_AUDIT_RETRY_DELAY_SECONDS:-10}"
# configuration of the DAGs: the one JSON Variable delivery_audit_settings (its keys and
# defaults: docs/airflow.md), given as an environment variable; JSON-encoded by Python so any
# checkout path is quoted right. Local paths only: no AWS Connection is needed.
AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS="$("$VENV_BIN/python" -c '
import json, sys
print(json.dumps({"data_root": sys.argv[1], "report_root": sys.argv[2],
                  "config_file": sys.argv[3], "notifier": {"type": "log"}}))
' "$DATA" "$REPORTS" "$DATA/config.yaml")"
export AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS
# the one-Variable-per-setting layout of earlier versions is refused: drop it from this shell
for old in $(compgen -e | grep '^AIRFLOW_VAR_DELIVERY_AUDIT_' | grep -v '^AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS$' || true); do
  unset "$old"
done

mkdir -p "$AIRFLOW_HOME" "$DEMO"
echo "== airflow db migrate (AIRFLOW_HOME=$AIRFLOW_HOME)"
airflow db migrate >"$AIRFLOW_HOME/db-migrate.out" 2>&1 || {
  cat "$AIRFLOW_HOME/db-migrate.out"; exit 1; }

if [[ "${KEEP_DATA:-0}" != 1 || ! -f "$DATA/config.yaml" ]]; then
  echo "== delivery-audit generate --scenario mixed --messages $MESSAGES --seed $SEED ($DAY)"
  rm -rf "$DATA" "$DEMO/generated"
  delivery-audit generate --scenario mixed --messages "$MESSAGES" --seed "$SEED" \
    --start "${DAY}T00:00:00Z" --out "$DEMO/generated"
  for src in sends broker ledger events; do
    if [[ -d "$DEMO/generated/$src" ]]; then
      mkdir -p "$DATA/$src/dt=$DAY"
      mv "$DEMO/generated/$src"/* "$DATA/$src/dt=$DAY/"
    fi
  done
  cp "$DEMO/generated/config.yaml" "$DATA/config.yaml"
  [[ -f "$DEMO/generated/truth.json" ]] && cp "$DEMO/generated/truth.json" "$DATA/truth.json"
  rm -rf "$DEMO/generated"
fi

echo "== airflow dags test delivery_audit_daily $NEXT_DAY   (audits [$DAY, $NEXT_DAY))"
started=$(date +%s)
set +e
airflow dags test delivery_audit_daily "$NEXT_DAY" >"$DEMO/dags-test.log" 2>&1
rc=$?
set -e
echo "   finished in $(( $(date +%s) - started ))s (exit $rc); full log: $DEMO/dags-test.log"

"$VENV_BIN/python" - "$AIRFLOW_HOME/airflow.db" "$REPORTS" "$DAY" <<'EOF'
import json, sqlite3, sys
from pathlib import Path

db, reports, day = sys.argv[1:]
con = sqlite3.connect(db)
run_id, state = con.execute(
    "SELECT run_id, state FROM dag_run WHERE dag_id='delivery_audit_daily' "
    "ORDER BY id DESC LIMIT 1").fetchone()
print(f"\nDAG run {run_id}: {state}")
print(f"{'task':<24} {'state':<10} {'try':>3} {'seconds':>8}")
for task_id, st, tries, dur in con.execute(
        "SELECT task_id, state, try_number, duration FROM task_instance "
        "WHERE dag_id='delivery_audit_daily' AND run_id=? ORDER BY start_date", (run_id,)):
    print(f"{task_id:<24} {st or '-':<10} {tries:>3} {dur or 0:>8.1f}")
found = sorted(Path(reports).glob(f"dt={day}/*/report.json"))
if not found:
    sys.exit(f"no report under {reports}/dt={day}/")
report = json.loads(found[-1].read_text())
v = report.get("verdict", {})
print(f"\nreport:   {found[-1]}")
print(f"html:     {found[-1].with_name('report.html')}")
print(f"manifest: {found[-1].with_name('_manifest.json')} "
      f"({'present' if found[-1].with_name('_manifest.json').exists() else 'MISSING'})")
print(f"verdict:  {v.get('verdict')}  {'; '.join(map(str, v.get('reasons', [])))}")
if state != "success":
    sys.exit(1)
EOF
exit $rc
