"""spark-submit entry point: the reconcile job.

    spark-submit jobs/reconcile.py --sends GLOB --broker GLOB --ledger GLOB [--events GLOB]
        --start ISO --end ISO [--grace 60m] [--config FILE] --out DIR_OR_URI [--stage all]

The arguments are those of `delivery-audit run`; the Spark master comes from
spark-submit. One run validates the inputs (GX), reconciles, validates the results and
publishes the report with its manifest last. Exit status: 0 pass/warn, 1 unreadable
input, 3 verdict fail.
"""

from __future__ import annotations

import sys

STAGES = ("all",)


def main(argv: list[str]) -> int:
    args = list(argv)
    if "--stage" in args:
        i = args.index("--stage")
        stage = args[i + 1] if i + 1 < len(args) else ""
        if stage not in STAGES:
            print(f"error: --stage {stage!r} is not supported (one of {', '.join(STAGES)}); "
                  "the job runs every stage in one Spark application", file=sys.stderr)
            return 2
        del args[i:i + 2]
    from delivery_audit.cli import app

    try:
        # click returns the command's exit code instead of exiting
        code = app(["run", *args], prog_name="reconcile", standalone_mode=False)
    except Exception as exc:  # click usage errors carry their exit code
        if getattr(exc, "exit_code", None) is None:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
