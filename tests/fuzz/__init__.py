"""Hostile input, property-based (Hypothesis): batches of mutated rows through every
canonical reader (JSON Lines, CSV, Parquet) and every adapter format.

Properties, for every example:

* ingestion never crashes (a row-level problem never stops the run);
* every row lands valid or quarantined, quarantined rows with a non-empty reason, and
  ``rows_read = rows_valid + rows_quarantined`` (contract §2) with ``rows_read`` the
  number of non-blank lines / data rows written;
* quarantined rows name the file and the line (row) they came from: the raw text at
  that line, the row marker of that data row, or the original line for adapters;
* rows left intact stay valid, rows broken beyond repair are quarantined, and a copy of
  an earlier row is "duplicate of line N" of that row.

An example is a batch (40–120 rows, one or a few files). A Spark job per example would take
seconds, so the examples of all three readers are written into one file set and ingested
together (``check_many``: up to 50 per reader per Spark run, each file checked on its own;
a source's files mix formats); the adapters, pure
Python, run 10,000 small examples. Examples are derandomized (the same every run);
``FUZZ_EXAMPLES`` (``make fuzz``) raises their number, ``FUZZ_SHRINK=1`` lets Hypothesis
shrink a failure (slow). tests/test_hostile_bulk.py labels every line of one large corpus.
"""
