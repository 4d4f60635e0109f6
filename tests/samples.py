# ruff: noqa: E501  (verbatim tool output and log lines)
"""Kafka tool output and client/coordinator log lines shared by the adapter tests, the adapter
fuzz (tests/fuzz/test_adapters.py) and the hostile bulk test: the tools' formats (with a few
deliberately broken lines for the adapters' error paths), and log lines of which the Spring
Kafka and coordinator ones are verbatim from the incident write-ups in /work/shared/seeds
(000 and 001)."""

# ------------------------------------------------------------------ Kafka tools (adapters)

NEW_DUMP = """\
Dumping /var/lib/kafka/data/orders-3/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 1 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1742739702864 size: 82 magic: 2 compresscodec: none crc: 758896000 isvalid: true
| offset: 0 CreateTime: 1742739702864 keySize: 3 valueSize: 7 sequence: 0 headerKeys: [] key: k-1 payload: order.7
| offset: 1 CreateTime: 1742739702865 keySize: -1 valueSize: 14 sequence: 1 headerKeys: [trace, seq] payload: tset a si siht
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 82 CreateTime: 1742739702900 size: 78 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 2 CreateTime: 1742739702900 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
baseOffset: 3 lastOffset: 4 count: 2 baseSequence: 5 lastSequence: 6 producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 160 CreateTime: 1742739703000 size: 90 magic: 2 compresscodec: none crc: 2 isvalid: true
| offset: 3 CreateTime: 1742739703000 keySize: 12 valueSize: 1 sequence: 5 headerKeys: [] key: x payload: y payload: 9
| offset: 4 CreateTime: 1742739703001 keySize: 2 valueSize: 1 headerKeys: [] key: k2 payload: 8
this is not a dump line
| offset: x CreateTime: 1 keySize: -1 valueSize: 1 payload: 1
"""

OLD_DUMP = """\
Dumping /kafka-logs/legacy-0/00000000000000000000.log
Starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1556000000000 size: 70 magic: 2 compresscodec: NONE crc: 1 isvalid: true
| offset: 0 CreateTime: 1556000000000 keysize: 2 valuesize: 2 sequence: -1 headerKeys: [] key: k1 payload: 42
| offset: 1 LogAppendTime: 1556000000001 keysize: 2 valuesize: 5 sequence: -1 headerKeys: [] payload: 43
"""

PRODUCER = [
    '{"name":"startup_complete","timestamp":1646221252000}',
    '{"timestamp":1646221252222,"name":"producer_send_success","key":null,"value":"0",'
    '"offset":0,"topic":"verify-test","partition":0}',
    '{"name":"producer_send_success","timestamp":1646221252223,"key":"k","value":"run.1",'
    '"offset":1,"topic":"verify-test","partition":0}',
    '{"timestamp":1646221252300,"name":"producer_send_error","key":"k","value":"2",'
    '"topic":"verify-test","exception":"class org.apache.kafka.common.errors.TimeoutException",'
    '"message":"Expiring 1 record(s)"}',
    '{"timestamp":1646221252301,"name":"producer_send_error","key":null,"value":"3",'
    '"topic":"verify-test","exception":"class org.apache.kafka.common.errors.'
    'RecordTooLargeException","message":"too large"}',
    '{"name":"tool_data","sent":2,"acked":2,"target_throughput":-1}',
    'not json at all',
    '{"timestamp":1646221252400,"name":"producer_send_success","key":null,"value":"abc",'
    '"offset":4,"topic":"verify-test","partition":0}',
    '{"name":"shutdown_complete","timestamp":1646221253000}',
]

CONSUMER = [
    '{"timestamp":1646221260000,"name":"startup_complete"}',
    '{"timestamp":1646221260100,"name":"partitions_assigned","partitions":[{"topic":"verify-test",'
    '"partition":0},{"topic":"verify-test","partition":1}]}',
    '{"timestamp":1646221260200,"name":"record_data","key":null,"value":"0","topic":"verify-test",'
    '"partition":0,"offset":0}',
    '{"timestamp":1646221260201,"name":"record_data","key":"k","value":"run.1",'
    '"topic":"verify-test","partition":0,"offset":1}',
    '{"timestamp":1646221260300,"name":"records_consumed","count":2,"partitions":[{"topic":'
    '"verify-test","partition":0,"count":2,"minOffset":0,"maxOffset":1}]}',
    '{"timestamp":1646221260400,"name":"offsets_committed","offsets":[{"topic":"verify-test",'
    '"partition":0,"offset":2}],"success":true}',
    '{"timestamp":1646221260500,"name":"offsets_committed","offsets":[{"topic":"verify-test",'
    '"partition":0,"offset":2}],"success":false,"error":"CommitFailedException: rebalanced"}',
    '{"timestamp":1646221260600,"name":"partitions_revoked","partitions":[{"topic":"verify-test",'
    '"partition":0}]}',
    '{"timestamp":1646221260700,"name":"partitions_revoked","partitions":[]}',
    '{"timestamp":1646221261000,"name":"shutdown_complete"}',
]

CONSOLE = """\
CreateTime:1700000000000\tPartition:0\tOffset:42\tkey-1\tpayload.17
CreateTime:1700000000001\tPartition:1\tOffset:7\tnull\t18
LogAppendTime:1700000000002\tPartition:1\tOffset:8\tseq:19,trace:x\tk\t{"n": 1}
CreateTime:1700000000003\tOffset:9\tk\t20
Processed a total of 4 messages
"""


# ------------------------------------------------------------------ client and broker logs

SPRING = """\
11:15:04.278 [org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1] WARN  o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-2, groupId=fans-push-service] Synchronous auto-commit of offsets {fans-push-9=OffsetAndMetadata{offset=103226, metadata=''}, fans-push-0=OffsetAndMetadata{offset=135409, metadata=''}, fans-push-1=OffsetAndMetadata{offset=103491, metadata=''}} failed: Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member. This means that the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time message processing. You can address this either by increasing the session timeout or by reducing the maximum size of batches returned in poll() with max.poll.records.
11:15:04.278 [org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1] INFO  o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-2, groupId=fans-push-service] Revoking previously assigned partitions [fans-push-9, fans-push-0, fans-push-1]
11:15:04.278 [org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1] INFO  o.s.k.l.KafkaMessageListenerContainer - partitions revoked: [fans-push-9, fans-push-0, fans-push-1]
11:15:04.300 [org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1] INFO  o.a.k.c.c.i.AbstractCoordinator - [Consumer clientId=consumer-2, groupId=fans-push-service] Successfully joined group with generation Generation{generationId=12, memberId='consumer-2-0f1e', protocol='range'}
11:15:04.310 [org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1] INFO  o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-2, groupId=fans-push-service] Adding newly assigned partitions: fans-push-3, fans-push-4
11:15:05.000 [main] INFO  com.example.App - started in 3.2 seconds
"""

JAVA_POLL = """\
2024-03-01 10:00:00,100 WARN [kafka-coordinator-heartbeat-thread | orders] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-orders-1, groupId=orders] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records.
2024-03-01 10:00:00,105 INFO [kafka-coordinator-heartbeat-thread | orders] o.a.k.c.c.i.AbstractCoordinator - [Consumer clientId=consumer-orders-1, groupId=orders] Member consumer-orders-1-5a4b sending LeaveGroup request to coordinator broker:9092 (id: 2147483646 rack: null) due to consumer poll timeout has expired.
2024-03-01 10:00:09,000 ERROR [main] c.e.Worker - commit failed
org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member.
\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.sendOffsetCommitRequest(ConsumerCoordinator.java:1109)
2024-03-01 10:00:10,000 INFO [main] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-orders-1, groupId=orders] Lost previously assigned partitions orders-0, orders-1
"""

KAFKA_PYTHON = """\
2019-07-17 15:20:30,000 - kafka.coordinator.consumer - INFO - Revoking previously assigned partitions {TopicPartition(topic='answer', partition=0), TopicPartition(topic='answer', partition=1)} for group answer_action
2019-07-17 15:20:31,000 - kafka.coordinator - WARNING - Heartbeat poll expired, leaving group
2019-07-17 15:20:40,000 - kafka.coordinator.consumer - INFO - Setting newly assigned partitions {TopicPartition(topic='answer', partition=1)} for group answer_action
"""

SERVER_LOG = """\
[2019-07-17 15:20:37,266] INFO [GroupCoordinator 0]: Preparing to rebalance group answer_action with old generation 741 (__consumer_offsets-9) (kafka.coordinator.group.GroupCoordinator)
[2019-07-17 15:20:37,266] INFO [GroupCoordinator 0]: Group answer_action with generation 742 is now empty (__consumer_offsets-9) (kafka.coordinator.group.GroupCoordinator)
[2019-07-17 15:21:37,662] INFO [GroupCoordinator 0]: Preparing to rebalance group answer_action with old generation 742 (__consumer_offsets-9) (kafka.coordinator.group.GroupCoordinator)
[2019-07-17 15:22:07,663] INFO [GroupCoordinator 0]: Stabilized group answer_action generation 743 (__consumer_offsets-9) (kafka.coordinator.group.GroupCoordinator)
[2019-07-17 15:22:07,664] INFO [GroupCoordinator 0]: Assignment received from leader for group answer_action for generation 743 (kafka.coordinator.group.GroupCoordinator)
[2019-07-17 15:22:37,664] INFO [GroupCoordinator 0]: Member kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f in group answer_action has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
[2023-01-01 10:00:00,000] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old generation 5 (__consumer_offsets-12) (reason: Removing member consumer-orders-1-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f on LeaveGroup; client reason: consumer poll timeout has expired.) (kafka.coordinator.group.GroupCoordinator)
[2023-01-01 10:00:01,000] INFO [GroupCoordinator 1]: Member[group.instance.id None, member.id consumer-orders-2-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f] has left group orders through explicit `LeaveGroup`; client reason: the consumer is being closed (kafka.coordinator.group.GroupCoordinator)
[2023-01-01 10:00:02,000] INFO [LogLoader partition=orders-0] Loading producer state (kafka.log.UnifiedLog$)
"""
