"""The command line of a local Spark Connect server on 127.0.0.1 (``make connect-up``).

    python scripts/spark_connect.py start [--master local[2]|spark://HOST:PORT|cluster]
                                          [--driver-memory 2g] [--executor-memory 1g]
    python scripts/spark_connect.py status
    python scripts/spark_connect.py stop

A warm Spark for thin clients (``delivery-audit run --spark-remote sc://…``, the Airflow
task's ``spark_connect`` Connection): one driver JVM running ``SparkConnectServer`` from the
installed PySpark (its jars ship spark-connect), gRPC and UI bound to free ports of
127.0.0.1 (scripts/spark_daemons.py ``ConnectServer``). ``--master cluster`` attaches it to
the standalone cluster ``make cluster-up`` started (its state file). The server's PID, URL
and ports are kept in a state file (``--state``; default in the temp folder, one per
checkout), so ``stop`` works from another shell; ``stop`` kills by PID only what carries the
server's marker.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
from pathlib import Path

from spark_daemons import HOST, ConnectServer, SparkCluster, state_path


def _master(given: str) -> str:
    """``cluster``: the master of the running standalone cluster of this checkout."""
    if given != "cluster":
        return given
    state = state_path("cluster")
    if not state.exists():
        raise SystemExit(f"no standalone cluster state at {state}: make cluster-up first")
    return SparkCluster.load(state).master_url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("start", "stop", "status", "url"))
    parser.add_argument("--state", type=Path, default=state_path("connect"))
    parser.add_argument("--master", default=os.environ.get("CONNECT_MASTER") or "local[2]")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--executor-memory", default="1g")
    args = parser.parse_args(argv)
    if args.command == "start":
        if old := ConnectServer.running_at(args.state):
            print(f"already running (state {args.state}):\n{old.describe()}")
            return 1
        server = ConnectServer(master=_master(args.master), driver_memory=args.driver_memory,
                               executor_memory=args.executor_memory)
        server.start()
        server._own_base = True  # the CLI exits; `stop` removes the folder
        server.save(args.state)
        print(server.describe())
        print(f"state    {args.state}\nuse it:  delivery-audit run --spark-remote {server.url} …"
              f", or SPARK_REMOTE={server.url}, or AIRFLOW_CONN_SPARK_CONNECT_DEFAULT="
              f"'{{\"conn_type\": \"spark_connect\", \"host\": \"{HOST}\", "
              f"\"port\": {server.port}}}'")
        return 0
    if not args.state.exists():
        print(f"no Spark Connect server state at {args.state}")
        return 1 if args.command in ("status", "url") else 0
    server = ConnectServer.load(args.state)
    if args.command == "url":
        print(server.url)
        return 0
    if args.command == "status":
        print(server.describe())
        print(f"processes: {server.running() or 'none'}")
        try:
            state = server.status()
        except (urllib.error.URLError, OSError) as exc:
            print(f"server UI not answering: {exc}")
            return 1
        print(f"gRPC port answering: {state['grpc']}; applications: "
              + ", ".join(f"{a['name']} ({a['id']})" for a in state["apps"]))
        return 0 if state["grpc"] else 1
    print(server.stop_saved(args.state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
