# The two commands of the README: `make demo` (the main job end to end on generated
# data) and `make test` (the test suite). Both install what they need first.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(CURDIR)/$(BIN)/python

DEMO_DIR ?= demo
DEMO_MESSAGES ?= 20000
DEMO_DAY ?= $(shell date -u -d yesterday +%Y-%m-%d)
BENCH_MESSAGES ?= 1000000
# pytest-xdist workers of make test (each its own Spark session; tests/conftest.py)
TEST_WORKERS ?= 2

.PHONY: setup demo demo-cli test test-fast test-lab test-cluster lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml sim/pyproject.toml scripts/setup.sh
	bash scripts/setup.sh $(PY) $(VENV)
	touch $(STAMP)

# The main job: a generated `mixed` day audited by the daily Airflow DAG (airflow dags
# test on SQLite, local Spark, local storage); prints where the report is.
demo: setup
	bash scripts/airflow_demo.sh

# The same audit without Airflow: generate a mixed day, run the CLI on it.
demo-cli: setup
	$(BIN)/delivery-audit generate --scenario mixed --messages $(DEMO_MESSAGES) --seed 7 \
	  --start $(DEMO_DAY)T00:00:00Z --out $(DEMO_DIR)/data
	$(BIN)/delivery-audit run --sends '$(DEMO_DIR)/data/sends/*' --broker '$(DEMO_DIR)/data/broker/*' \
	  --ledger '$(DEMO_DIR)/data/ledger/*' --events '$(DEMO_DIR)/data/events/*' \
	  --config $(DEMO_DIR)/data/config.yaml --start $(DEMO_DAY)T00:00:00Z \
	  --end $$(date -u -d "$(DEMO_DAY) + 1 day" +%Y-%m-%d)T00:00:00Z --out $(DEMO_DIR)/reports; \
	  code=$$?; [ $$code -eq 0 ] || [ $$code -eq 3 ]  # 3 = the audit found a failing anomaly

# Everything but the worker-kill audit on a standalone cluster (make test-cluster; the daily
# DAG's e2e test still runs on such a cluster). The labs run too: their recordings in the
# background from the session's start (tests/lab_recordings.py). CI runs this.
test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=20 -m "not cluster"

# A generated day audited on a standalone cluster (master + 2 workers on 127.0.0.1) equals its
# truth although one worker JVM is SIGKILLed mid-job (about 80 s).
test-cluster: setup
	$(BIN)/python -m pytest -q -m cluster

# The simulator's labs alone (also in make test): a real rebalance and real transactions on
# librdkafka's mock Kafka cluster, recorded and audited (about 45 s, most of it the stall
# that makes the consumer exceed its poll interval).
test-lab: setup
	$(BIN)/python -m pytest -q -m lab

# The unit tests only (no whole audits, subprocesses or servers): under 2 minutes.
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow and not audit" --durations=5

lint: setup
	$(BIN)/ruff check .

# Floor, skeleton (scripts/skeleton.py; BENCH_SKELETON=0 skips it) and audit on a
# BENCH_MESSAGES day, with stages, jobs, tasks, exchanges and ratios (BENCH_DUMP=1 keeps the
# REST API's jobs/stages/SQL as JSON). BENCH_CONNECT=0 skips the small day through a warm
# local Spark Connect server; BENCH_CONNECT_LARGE=1 also audits the BENCH_MESSAGES day
# through it (scripts/bench.py).
bench: setup class-archive
	BENCH_MESSAGES=$(BENCH_MESSAGES) $(BIN)/python scripts/bench.py

# The driver JVM's class archive (AppCDS; src/delivery_audit/class_archive.py): a local
# session starts ~4 s sooner from it. Built once per environment from a small audit (~1
# min); does nothing when built. Not part of setup: the test suite starts too few JVMs
# to earn that minute back.
.PHONY: class-archive
class-archive: setup
	$(BIN)/python scripts/class_archive.py

# Hostile input at volume (must finish in 10 minutes on 2 cores): the labelled corpus at
# HOSTILE_PER_SOURCE hostile lines per source in one audit (its table by kind is printed), the
# property tests with FUZZ_EXAMPLES examples per reader (runs of 50 in one Spark job each) and
# FUZZ_ADAPTER_EXAMPLES adapter examples (pure Python). FUZZ_SHRINK=1 lets Hypothesis shrink a
# failure. CI (make test) runs the same tests at 1,000 hostile lines per source, 4 examples per
# reader (derandomized: the same every run; one per source, their plans drawing every mutation
# kind of each reader, which tests/fuzz/test_readers.py checks), every adapter format and
# source once through ingest (drawing every adapter mutation kind, checked) and 3,000 adapter
# examples.
FUZZ_EXAMPLES ?= 100
FUZZ_ADAPTER_EXAMPLES ?= 10000
HOSTILE_PER_SOURCE ?= 10000
.PHONY: fuzz
fuzz: setup
	HOSTILE_PER_SOURCE=$(HOSTILE_PER_SOURCE) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	  FUZZ_ADAPTER_EXAMPLES=$(FUZZ_ADAPTER_EXAMPLES) $(BIN)/python -m pytest -q -s \
	  -p no:cacheprovider tests/test_hostile_bulk.py tests/fuzz

# A local Spark standalone cluster on 127.0.0.1 (a master and 2 workers, 1 core and 2 GB each;
# ports, PIDs and the temp dir in a state file). cluster-up prints the spark:// URL, e.g. for
# BENCH_MASTER=spark://… make bench or AIRFLOW_CONN_SPARK_DEFAULT; cluster-down stops it by PID.
.PHONY: cluster-up cluster-down cluster-status
cluster-up: setup
	$(BIN)/python scripts/spark_cluster.py start

cluster-down:
	$(BIN)/python scripts/spark_cluster.py stop

cluster-status:
	$(BIN)/python scripts/spark_cluster.py status

clean:
	rm -rf $(DEMO_DIR) .airflow .pytest_cache spark-warehouse

# A warm Spark for thin clients: a Spark Connect server on 127.0.0.1 (a free gRPC port and
# UI port; PID, URL and ports in a state file). connect-up prints the sc:// URL, for
# `delivery-audit run --spark-remote sc://…` (or SPARK_REMOTE) and the DAGs' Connect mode;
# CONNECT_MASTER=spark://… (or `cluster`: the one cluster-up started) runs its executors on a
# standalone cluster. connect-down stops it by PID.
.PHONY: connect-up connect-down connect-status
connect-up: setup
	$(BIN)/python scripts/spark_connect.py start $(if $(CONNECT_MASTER),--master '$(CONNECT_MASTER)')

connect-down:
	$(BIN)/python scripts/spark_connect.py stop

connect-status:
	$(BIN)/python scripts/spark_connect.py status
