"""The auditor's simulator: ``generator`` (fault scenarios with ground truth, the hostile
corpus), ``recorder`` (Kafka clients that log what they send and process), ``lab`` (a real
rebalance on a local mock cluster, audited) and ``cli`` (their commands)."""
