"""The light core: what the job and the Airflow plugin share, standard library only (DAG
files import it at parse time, so nothing heavy may come in with it).

* ``globs``: which files an input pattern means (local paths and S3 keys);
* ``window``: the audit window, durations, window ids and the grace precedence;
* ``timefmt``: instants as ISO-8601 text in UTC with ``Z``, and read back;
* ``s3uri``: ``s3://bucket/key`` split into bucket and key;
* ``process``: whether a PID is alive;
* ``manifest``: a published report's ``_manifest.json`` (the model the publisher writes,
  the verifier Airflow's report check runs);
* ``packaging``: the ``--py-files`` zip of the package, with its GX suites (package data);
* ``submit``: the spark-submit of an audit job (master, Python, memory, py-files, conf, env).

tests/test_core.py checks that importing it loads no third-party module.
"""
