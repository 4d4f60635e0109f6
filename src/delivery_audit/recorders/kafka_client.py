"""confluent-kafka, the optional extra the recording producer and consumer wrap
(``pip install 'delivery-audit[kafka]'``): imported here once, with the install hint."""

from __future__ import annotations

try:
    from confluent_kafka import (
        Consumer,
        KafkaError,
        KafkaException,
        Message,
        Producer,
        TopicPartition,
    )
except ImportError as exc:  # pragma: no cover - the extra is installed in the test env
    raise ImportError("the recording producer and consumer need confluent-kafka: "
                      "pip install 'delivery-audit[kafka]'") from exc

# delivery errors recorded as status `timeout` rather than `failed`
TIMEOUT_ERRORS = frozenset({KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT,
                            KafkaError.REQUEST_TIMED_OUT})

__all__ = ["TIMEOUT_ERRORS", "Consumer", "KafkaError", "KafkaException", "Message", "Producer",
           "TopicPartition"]
