"""The auditor's simulator: ``generator`` (fault scenarios with ground truth, the hostile
corpus), ``lab`` (a real rebalance on a local mock cluster, recorded with the product's
client recorders, ``delivery_audit.recorders``, and audited; ``lab_txn`` its transactions
scenario, ``lab_serve`` the broker alone; ``lab_broker`` and ``lab_audit`` what they share)
and ``cli`` (their commands)."""
