"""The command line of a local Spark standalone cluster on 127.0.0.1 (``make cluster-up``).

    python scripts/spark_cluster.py start [--workers 2] [--cores 1] [--memory 2g]
    python scripts/spark_cluster.py status
    python scripts/spark_cluster.py stop

One master and N workers from the installed PySpark (the pip package has no sbin/start-*.sh,
so the daemons are started with ``bin/spark-class``: scripts/spark_daemons.py), for tests, the
benchmark and by hand. The CLI keeps the cluster's PIDs and ports in a state file (``--state``;
default in the temp folder, one per checkout), so ``stop`` works from another shell; ``stop``
kills by PID only what carries the cluster's marker.
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
from pathlib import Path

from spark_daemons import SparkCluster, state_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("start", "stop", "status"))
    parser.add_argument("--state", type=Path, default=state_path("cluster"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="2g")
    args = parser.parse_args(argv)
    if args.command == "start":
        if old := SparkCluster.running_at(args.state):
            print(f"already running (state {args.state}):\n{old.describe()}")
            return 1
        cluster = SparkCluster(workers=args.workers, cores=args.cores, memory=args.memory)
        cluster.start()
        # the CLI exits; the state file is how `stop` finds the cluster again
        cluster._own_base = True
        cluster.save(args.state)
        print(cluster.describe())
        print(f"state    {args.state}\nuse it:  BENCH_MASTER={cluster.master_url} make bench, or "
              f"AIRFLOW_CONN_SPARK_DEFAULT='{{\"conn_type\": \"spark\", "
              f"\"host\": \"{cluster.master_url}\"}}'")
        return 0
    if not args.state.exists():
        print(f"no cluster state at {args.state}")
        return 1 if args.command == "status" else 0
    cluster = SparkCluster.load(args.state)
    if args.command == "status":
        print(cluster.describe())
        print(f"processes: {cluster.running() or 'none'}")
        try:
            state = cluster.status()
        except (urllib.error.URLError, OSError) as exc:
            print(f"master not answering: {exc}")
            return 1
        print(f"master {state.get('status')}; workers: "
              + ", ".join(f"{w['host']} {w['state']} {w['cores']} core(s)"
                          for w in state.get("workers", [])))
        print(f"active apps: {[a.get('name') for a in state.get('activeapps', [])]}")
        return 0
    print(cluster.stop_saved(args.state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
