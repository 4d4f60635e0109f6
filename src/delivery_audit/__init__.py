"""Kafka delivery auditor: proves from logs whether a Kafka system kept its delivery promises."""

__version__ = "0.1.0"
