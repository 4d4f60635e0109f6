# ruff: noqa: E501  (log lines as Kafka renders them)
"""Every GroupCoordinator and consumer-client wording the log adapters read (issue 15), each
on a line rendered from the format string of Kafka's (or kafka-python's) source at the tag
named beside it, in the log4j layout the broker/client prints. The real pastes are in
tests/data/wild/wordings/ (tests/test_wild_samples.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from delivery_audit.adapters import convert
from delivery_audit.config import AuditConfig

U1 = "3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f"
U2 = "0619b903-29b6-452a-851e-6f8d928e86bc"
B = "[2024-01-16 23:00:00,000] INFO [GroupCoordinator 1]: "
T = " (kafka.coordinator.group.GroupCoordinator)"
B4 = "[2025-04-04 13:33:13,847] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=22] "
T4 = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"


def _rows(tmp_path, fmt, text, options=None, name="server.log"):
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    accounts: list = []
    out, _ = convert(fmt, "events", [str(path)], [name], tmp_path / "out",
                     AuditConfig.from_dict({"adapters": options or {}}), accounts=accounts)
    rows = [json.loads(x) for x in Path(out[0]).read_text().splitlines()]
    assert accounts[0].unaccounted == 0
    return rows


def _apart(lines: list[str]) -> str:
    """The lines a minute apart (the adapter writes a member event repeated within a second
    once: the coordinator announces some leaves and joins twice)."""
    return "\n".join(re.sub(r"(\d{2}:)\d{2}:\d{2}([,.])", rf"\g<1>{i:02d}:00\g<2>",
                            line, count=1) for i, line in enumerate(lines))


def _short(rows):
    return [(r["event"], r["group_id"], r["member_id"], r["generation"]) for r in rows]


# (where the wording is in Kafka's source, the line, the events it becomes)
COORDINATOR = [
    ("0.9.0.1–0.10.2 kafka/coordinator/GroupCoordinator.scala prepareRebalance",
     "[2017-03-12 07:17:19,557] INFO [GroupCoordinator 0]: Preparing to restabilize group g with old generation 3 (kafka.coordinator.GroupCoordinator)",
     [("revoked", "g", None, 3)]),
    ("0.9.0.1–0.10.1 onCompleteJoin", "[2016-01-01 00:00:00,000] INFO [GroupCoordinator 0]: Group g generation 4 is dead and removed (kafka.coordinator.GroupCoordinator)",
     [("revoked", "g", None, 4)]),
    ("0.10.2.2 onCompleteJoin", "[2017-03-12 07:17:19,567] INFO [GroupCoordinator 0]: Stabilized group g generation 4 (kafka.coordinator.GroupCoordinator)",
     [("assigned", "g", None, 4)]),
    ("0.10.2.2 onMemberFailure (trace)", f"[2017-03-12 07:17:19,567] TRACE [GroupCoordinator 0]: Member consumer-1-{U1} in group g has failed (kafka.coordinator.GroupCoordinator)",
     [("left_group", "g", "consumer-1", None)]),
    ("1.1.1 group/GroupCoordinator.scala prepareRebalance", B + "Preparing to rebalance group g with old generation 7 (__consumer_offsets-12)" + T,
     [("revoked", "g", None, 7)]),
    ("1.1.1 handleLeaveGroup (debug), 2.2.2 (info)", B + f"Member consumer-1-{U1} in group g has left, removing it from the group" + T,
     [("left_group", "g", "consumer-1", None)]),
    ("2.2.2 prepareRebalance + addMemberAndRebalance reason", B + f"Preparing to rebalance group g in state PreparingRebalance with old generation 7 (__consumer_offsets-12) (reason: Adding new member consumer-1-{U1})" + T,
     [("revoked", "g", None, 7), ("joined_group", "g", "consumer-1", None)]),
    ("2.2.2–3.9 onMemberFailure", B + f"Member consumer-1-{U1} in group g has failed, removing it from the group" + T,
     [("left_group", "g", "consumer-1", None)]),
    ("2.2.2–3.9 onExpireHeartbeat (pending)", B + f"Pending member consumer-1-{U1} in group g has been removed after session timeout expiration." + T,
     [("left_group", "g", "consumer-1", None)]),
    ("2.4.1–2.8.2 handleLeaveGroup", B + f"Member[group.instance.id None, member.id consumer-1-{U1}] in group g has left, removing it from the group" + T,
     [("left_group", "g", "consumer-1", None)]),
    ("2.8.2 doUnknownJoinGroup", B + f"Dynamic Member with unknown member id joins group g in Stable state. Created a new member id consumer-1-{U1} for this member and add to the group." + T,
     [("joined_group", "g", "consumer-1", None)]),
    ("2.8.2–3.9 onCompleteJoin", B + f"Group g removed dynamic members who haven't joined: Set(consumer-1-{U1}, consumer-2-{U2})" + T,
     [("left_group", "g", "consumer-1", None), ("left_group", "g", "consumer-2", None)]),
    ("2.8.2–3.9 removePendingSyncMember reason", B + f"Preparing to rebalance group g in state PreparingRebalance with old generation 8 (__consumer_offsets-12) (reason: Removing Set(consumer-2-{U2}) on pending sync request expiration)" + T,
     [("revoked", "g", None, 8), ("left_group", "g", "consumer-2", None)]),
    ("2.8.2–3.9 onExpireHeartbeat reason", B + f"Preparing to rebalance group g in state PreparingRebalance with old generation 8 (__consumer_offsets-12) (reason: removing member consumer-2-{U2} on heartbeat expiration)" + T,
     [("revoked", "g", None, 8), ("left_group", "g", "consumer-2", None)]),
    ("3.0.0–3.1 handleLeaveGroup (MemberMetadata.toString)", B + f"Member MemberMetadata(memberId=consumer-1-{U1}, groupInstanceId=None, clientId=consumer-1, clientHost=/10.0.0.7, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range, cooperative-sticky)) has left group g through explicit `LeaveGroup` request" + T,
     [("left_group", "g", "consumer-1", None)]),
    ("3.2.3–3.9 handleLeaveGroup (KIP-800 reason)", B + f"Member MemberMetadata(memberId=consumer-1-{U1}, groupInstanceId=None, clientId=consumer-1, clientHost=/10.0.0.7, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) has left group g through explicit `LeaveGroup`; client reason: the consumer is being closed" + T,
     [("left_group", "g", "consumer-1", None)]),
    ("3.2.3–3.9 removeCurrentMemberFromGroup reason", B + f"Preparing to rebalance group g in state PreparingRebalance with old generation 9 (__consumer_offsets-12) (reason: Removing member consumer-1-{U1} on LeaveGroup; client reason: consumer poll timeout has expired.)" + T,
     [("revoked", "g", None, 9), ("left_group", "g", "consumer-1", None)]),
    ("3.0.0–3.9 handleLeaveGroup (pending)", B + f"Pending member with memberId=consumer-1-{U1} has left group g through explicit `LeaveGroup` request" + T,
     [("left_group", "g", "consumer-1", None)]),
    ("3.0.0–3.9 doNewMemberJoinGroup (KIP-394)", B + f"Dynamic member with unknown member id joins group g in Empty state. Created a new member id consumer-1-{U1} and request the member to rejoin with this id." + T,
     [("joined_group", "g", "consumer-1", None)]),
    ("3.0.0–3.9 doStaticNewMemberJoinGroup", B + f"Static member with groupInstanceId=inst-1 and unknown member id joins group g in Stable state. Created a new member id consumer-1-{U1} for this member and add to the group." + T,
     [("joined_group", "g", "consumer-1", None)]),
    ("3.9.0 / 4.x group-coordinator GroupMetadataManager.prepareRebalance", B4 + f"Preparing to rebalance group g in state PreparingRebalance with old generation 5 (reason: removing member consumer-1-{U1} on heartbeat expiration.)." + T4,
     [("revoked", "g", None, 5), ("left_group", "g", "consumer-1", None)]),
    ("4.x classicGroupLeaveToClassicGroup rebalance reason", B4 + f"Preparing to rebalance group g in state PreparingRebalance with old generation 5 (reason: explicit `LeaveGroup` request for (consumer-1-{U1}, consumer-2-{U2}) members.)." + T4,
     [("revoked", "g", None, 5), ("left_group", "g", "consumer-1", None), ("left_group", "g", "consumer-2", None)]),
    ("4.x classicGroupLeaveToClassicGroup", B4 + f"[Group g] Member consumer-1-{U1} has left group through explicit `LeaveGroup` request; client reason: the consumer is being closed" + T4,
     [("left_group", "g", "consumer-1", None)]),
    ("4.x classicGroupLeaveToConsumerGroup", B4 + f"[Group g] Dynamic Member consumer-1-{U1} has left group through explicit `LeaveGroup` request; client reason: not provided" + T4,
     [("left_group", "g", "consumer-1", None)]),
    ("4.x classicGroupLeaveToClassicGroup (pending)", B4 + f"[Group g] Pending member consumer-1-{U1} has left group through explicit `LeaveGroup` request; client reason: not provided" + T4,
     [("left_group", "g", "consumer-1", None)]),
    ("4.x onClassicGroupHeartbeatExpiration", B4 + f"Member consumer-1-{U1} in group g has failed, removing it from the group." + T4,
     [("left_group", "g", "consumer-1", None)]),
    ("4.x completeClassicGroupJoin", B4 + "Stabilized group g generation 6 with 2 members." + T4,
     [("assigned", "g", None, 6)]),
    ("4.x completeClassicGroupJoin (empty)", B4 + "Group g with generation 6 is now empty." + T4,
     [("revoked", "g", None, 6)]),
    ("4.x completeClassicGroupJoin (not rejoined)", B4 + f"Group g removed dynamic members who haven't joined: [consumer-1-{U1}]" + T4,
     [("left_group", "g", "consumer-1", None)]),
    ("4.x classicGroupJoinNewDynamicMember", B4 + f"Dynamic member with unknown member id joins group g in Empty state. Created a new member id consumer-1-{U1} and requesting the member to rejoin with this id." + T4,
     [("joined_group", "g", "consumer-1", None)]),
    ("4.x classicGroupJoinExistingMember (pending)", B4 + f"Pending dynamic member with id consumer-1-{U1} joins group g in Empty state. Adding to the group now." + T4,
     [("joined_group", "g", "consumer-1", None)]),
]


@pytest.mark.parametrize("where,line,expected", COORDINATOR, ids=[c[0] for c in COORDINATOR])
def test_coordinator_wording(tmp_path, where, line, expected):
    rows = _rows(tmp_path, "coordinator-log", line)
    assert all("__error" not in r for r in rows)
    assert _short(rows) == expected
    for r in rows:
        if r["member_id"]:
            assert f"member id {r['member_id']}-" in r["detail"]  # the full id is kept


def test_coordinator_leave_and_join_details(tmp_path):
    lines = [COORDINATOR[i][1] for i in (3, 13, 16, 15, 11, 20)]
    rows = [r for r in _rows(tmp_path, "coordinator-log", _apart(lines))
            if r["event"] == "left_group"]
    details = [r["detail"].split(";")[0] for r in rows]
    assert details[0].startswith("session timeout (coordinator: member has failed")
    assert details[1] == "session timeout (heartbeat expiration)"
    assert details[2] == "poll timeout (LeaveGroup: consumer poll timeout has expired)"
    assert rows[3]["detail"].startswith("LeaveGroup: the consumer is being closed")
    assert "(client host 10.0.0.7)" in rows[3]["detail"]
    assert details[4].startswith("poll timeout (did not rejoin within the rebalance timeout")


KIP848 = [
    ("3.7 consumerGroupHeartbeat", "[GroupId g2] Bumped group epoch to 5.", []),
    ("3.7 consumerGroupHeartbeat", "[GroupId g2] Member Zq6ZtE0LQ-2_DvyXqxbDCw joins the consumer group.",
     [("joined_group", "g2", "Zq6ZtE0LQ-2_DvyXqxbDCw", 5)]),
    ("3.9/4.x getOrMaybeSubscribeDynamicConsumerGroupMember", "[GroupId g2] Member gjWzAEmmRlOfypB2_GB_9Q joins the consumer group using the consumer protocol.",
     [("joined_group", "g2", "gjWzAEmmRlOfypB2_GB_9Q", 5)]),
    ("3.8/4.x new assignment state (info in 3.8–3.9)", "[GroupId g2] Member gjWzAEmmRlOfypB2_GB_9Q new assignment state: epoch=5, previousEpoch=4, state=STABLE, assignedPartitions=[8iWjCLGESE6MUiR5ANkArg-0, 8iWjCLGESE6MUiR5ANkArg-1] and revokedPartitions=[].",
     [("assigned", "g2", "gjWzAEmmRlOfypB2_GB_9Q", 5)]),
    ("3.8/4.x new assignment state (revoking)", "[GroupId g2] Member Zq6ZtE0LQ-2_DvyXqxbDCw new assignment state: epoch=4, previousEpoch=4, state=UNREVOKED_PARTITIONS, assignedPartitions=[8iWjCLGESE6MUiR5ANkArg-2].",
     [("revoked", "g2", "Zq6ZtE0LQ-2_DvyXqxbDCw", 4)]),
    ("3.7–3.9/4.x consumerGroupLeave", "[GroupId g2] Member Zq6ZtE0LQ-2_DvyXqxbDCw left the consumer group.",
     [("left_group", "g2", "Zq6ZtE0LQ-2_DvyXqxbDCw", 5)]),
    ("3.7 scheduleConsumerGroupSessionTimeout", "[GroupId g2] Member gjWzAEmmRlOfypB2_GB_9Q fenced from the group because its session expired.",
     [("left_group", "g2", "gjWzAEmmRlOfypB2_GB_9Q", 5)]),
    ("3.8+/4.x consumerGroupFenceMemberOperation", "[GroupId g2] Member gjWzAEmmRlOfypB2_GB_9Q fenced from the group because the member session expired..",
     [("left_group", "g2", "gjWzAEmmRlOfypB2_GB_9Q", 5)]),
    ("3.7+/4.x scheduleConsumerGroupRebalanceTimeout", "[GroupId g2] Member gjWzAEmmRlOfypB2_GB_9Q fenced from the group because it failed to transition from epoch 4 within 300000ms.",
     [("left_group", "g2", "gjWzAEmmRlOfypB2_GB_9Q", 5)]),
    ("3.7 Static Member … left", "[GroupId g2] Static Member Zq6ZtE0LQ-2_DvyXqxbDCw with instance id inst-1 temporarily left the consumer group.",
     [("left_group", "g2", "Zq6ZtE0LQ-2_DvyXqxbDCw", 5)]),
]


def test_kip848_consumer_group_wordings(tmp_path):
    text = _apart([B4 + line + T4 for _, line, _ in KIP848])
    rows = _rows(tmp_path, "coordinator-log", text)
    assert _short(rows) == [e for _, _, want in KIP848 for e in want]
    fenced = [r["detail"] for r in rows if "fenced" in r["detail"]]
    assert fenced[0].startswith("session timeout") and fenced[1].startswith("session timeout")
    assert fenced[2].startswith("poll timeout")


def test_members_of_one_client_id_stay_distinct(tmp_path):
    """Two console consumers (same client.id, different UUIDs) alive at once are two
    members; a member keeps its name for the whole file; a restart after both left is the
    client id again."""
    c1, c2 = "console-consumer-801d7cec-3bb7-4d98-a20e-bfc325394f6d", f"console-consumer-{U1}"
    c3 = f"console-consumer-{U2}"  # a restarted console consumer: a new member id
    lines = [
        B4 + f"Dynamic member with unknown member id joins group g in Empty state. Created a new member id {c1} and requesting the member to rejoin with this id." + T4,
        B4 + f"Dynamic member with unknown member id joins group g in Stable state. Created a new member id {c2} and requesting the member to rejoin with this id." + T4,
        B4 + f"[Group g] Member {c2} has left group through explicit `LeaveGroup` request; client reason: the consumer is being closed" + T4,
        B4 + f"[Group g] Member {c1} has left group through explicit `LeaveGroup` request; client reason: the consumer is being closed" + T4,
        B4 + f"Dynamic member with unknown member id joins group g in Empty state. Created a new member id {c3} and requesting the member to rejoin with this id." + T4,
    ]
    rows = _rows(tmp_path, "coordinator-log", _apart(lines))
    assert [r["member_id"] for r in rows] == ["console-consumer", c2, c2, "console-consumer",
                                              "console-consumer"]
    assert "kept distinct" in rows[1]["detail"]
    keep = _rows(tmp_path, "coordinator-log", _apart(lines), {"member_uuid": "keep"})
    assert [r["member_id"] for r in keep] == [c1, c2, c2, c1, c3]


def test_two_hosts_sharing_a_client_id_keep_the_host(tmp_path):
    meta = ("Member MemberMetadata(memberId=consumer-1-{u}, groupInstanceId=None, clientId=consumer-1, "
            "clientHost=/{h}, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) "
            "has left group g through explicit `LeaveGroup`; client reason: the consumer is being closed")
    lines = [B + f"Preparing to rebalance group g in state PreparingRebalance with old generation 1 (__consumer_offsets-1) (reason: Adding new member consumer-1-{U1} with group instance id None; client reason: not provided)" + T,
             B + f"Preparing to rebalance group g in state PreparingRebalance with old generation 2 (__consumer_offsets-1) (reason: Adding new member consumer-1-{U2} with group instance id None; client reason: not provided)" + T,
             B + meta.format(u=U2, h="10.0.0.8") + T,
             B + meta.format(u=U1, h="10.0.0.7") + T]
    rows = [r for r in _rows(tmp_path, "coordinator-log", _apart(lines)) if r["member_id"]]
    assert [(r["event"], r["member_id"]) for r in rows] == [
        ("joined_group", "consumer-1"), ("joined_group", f"consumer-1-{U2}"),
        ("left_group", f"consumer-1-{U2}"), ("left_group", "consumer-1")]


# ---------------------------------------------------------------- consumer clients

CLIENT = [
    ("0.10.0.1 ConsumerCoordinator.onJoinPrepare",
     "2017-03-12 07:17:19,636 INFO  [main] o.a.k.c.c.i.ConsumerCoordinator - Revoking previously assigned partitions [t-0, t-1] for group g",
     [("revoked", "g", "app", "t", 0, None), ("revoked", "g", "app", "t", 1, None)]),
    ("0.10.0.1–1.0 ConsumerCoordinator.onJoinComplete",
     "2017-03-12 07:17:19,636 INFO  [main] o.a.k.c.c.i.ConsumerCoordinator - Setting newly assigned partitions [helloworld-sender.t-0, helloworld-sender.t-1] for group g",
     [("assigned", "g", "app", "helloworld-sender.t", 0, None), ("assigned", "g", "app", "helloworld-sender.t", 1, None)]),
    ("0.10.1–1.0 ConsumerCoordinator.maybeAutoCommitOffsetsSync",
     "2018-01-16 23:00:00,000 WARN  [main] o.a.k.c.c.i.ConsumerCoordinator - Auto-commit of offsets {t-0=OffsetAndMetadata{offset=42, metadata=''}, t-1=OffsetAndMetadata{offset=7, metadata=''}} failed for group g: Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member.",
     [("commit_failed", "g", "app", "t", 0, 42), ("commit_failed", "g", "app", "t", 1, 7)]),
    ("0.10.0.1 ConsumerCoordinator (kafka-python has it too)",
     "2017-01-16 23:00:00,000 WARN  [main] o.a.k.c.c.i.ConsumerCoordinator - Auto offset commit failed for group g: Commit cannot be completed since the group has already rebalanced",
     [("commit_failed", "g", "app", None, None, None)]),
    ("1.1.1–3.x ConsumerCoordinator OffsetCommitResponseHandler",
     "2019-01-16 23:00:00,000 ERROR [main] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-1, groupId=g] Offset commit failed on partition t-3 at offset 99: The coordinator is not aware of this member.",
     [("commit_failed", "g", "consumer-1", "t", 3, 99)]),
    ("2.3+ [Consumer instanceId=…] prefix (KIP-345)",
     "2020-01-16 23:00:00,000 INFO  [main] o.a.k.c.c.i.ConsumerCoordinator - [Consumer instanceId=inst-1, clientId=consumer-g-1, groupId=g] Revoke previously assigned partitions t-0",
     [("revoked", "g", "consumer-g-1", "t", 0, None)]),
    ("3.x AbstractCoordinator.maybeLeaveGroup",
     "2023-01-16 23:00:00,000 INFO  [kafka-coordinator-heartbeat-thread | g] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-g-1, groupId=g] Member consumer-g-1-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f sending LeaveGroup request to coordinator b1:9092 (id: 2147483646 rack: null) due to consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records.",
     [("left_group", "g", "consumer-g-1", None, None, None)]),
    ("2.6+ AbstractCoordinator.HeartbeatResponseHandler (UNKNOWN_MEMBER_ID)",
     "2023-01-16 23:00:00,000 INFO  [kafka-coordinator-heartbeat-thread | g] o.a.k.c.c.i.AbstractCoordinator - [Consumer clientId=consumer-g-1, groupId=g] Attempt to heartbeat with Generation{generationId=7, memberId='consumer-g-1-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f', protocol='range'} and group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation",
     [("left_group", "g", "consumer-g-1", None, None, None)]),
    ("3.x AbstractCoordinator.requestRejoin (read, no row)",
     "2023-01-16 23:00:00,000 INFO  [main] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-g-1, groupId=g] Request joining group due to: need to re-join with the given member-id: consumer-g-1-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f",
     []),
    ("kafka-python 1.4 coordinator/consumer.py (Python 2 set repr)",
     "2020-11-07 22:16:53,350 INFO Setting newly assigned partitions set([TopicPartition(topic=u'ping', partition=0)]) for group qa-ping",
     [("assigned", "qa-ping", "app", "ping", 0, None)]),
    ("kafka-python 1.4 coordinator/consumer.py (Python 2 set repr)",
     "2020-11-07 22:16:53,350 INFO Revoking previously assigned partitions set([TopicPartition(topic=u'ping', partition=0), TopicPartition(topic=u'ping', partition=1)]) for group qa-ping",
     [("revoked", "qa-ping", "app", "ping", 0, None), ("revoked", "qa-ping", "app", "ping", 1, None)]),
    ("kafka-python 1.4 coordinator/base.py coordinator_dead",
     "2018-07-11 05:04:07,754 WARNING Marking the coordinator dead (node 0) for group my_group_id: Heartbeat session expired.",
     [("left_group", "my_group_id", "app", None, None, None)]),
]


@pytest.mark.parametrize("where,line,expected", CLIENT, ids=[c[0] for c in CLIENT])
def test_client_wording(tmp_path, where, line, expected):
    rows = _rows(tmp_path, "client-log", line, name="app.log")
    assert all("__error" not in r for r in rows), rows
    assert [(r["event"], r["group_id"], r["member_id"], r["topic"], r["partition"], r["offset"])
            for r in rows] == expected


def test_a_stale_heartbeat_error_is_not_an_eviction(tmp_path):
    """2.6+ AbstractCoordinator: an UNKNOWN_MEMBER_ID for an older generation is ignored by
    the client, so it is not a leave."""
    line = ("2023-01-16 23:00:00,000 INFO  [kafka-coordinator-heartbeat-thread | g] o.a.k.c.c.i.AbstractCoordinator - "
            "[Consumer clientId=consumer-g-1, groupId=g] Attempt to heartbeat with stale Generation{generationId=6, "
            "memberId='consumer-g-1-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f', protocol='range'} and group instance id "
            "Optional.empty failed due to UNKNOWN_MEMBER_ID, ignoring the error")
    assert _rows(tmp_path, "client-log", line, name="app.log") == []


def test_kafka_python_eviction_seen_by_the_client(tmp_path):
    line = "2018-07-11 05:04:10,870 WARNING Heartbeat: local member_id was not recognized; this consumer needs to re-join"
    rows = _rows(tmp_path, "client-log", line, name="app.log")
    assert "set adapters.group" in rows[0]["__error"]  # the line names no group
    rows = _rows(tmp_path, "client-log", line, {"group": "my_group_id"}, name="app.log")
    assert [(r["event"], r["group_id"]) for r in rows] == [("left_group", "my_group_id")]
    assert rows[0]["detail"].startswith("evicted (seen by the client")


SPRING_BOOT = """\
2017-03-12 07:17:19.636  INFO 3880 --- [afka-consumer-1] o.a.k.c.c.internals.ConsumerCoordinator  : Setting newly assigned partitions [r-0] for group g1
2017-03-12 07:17:19.636  INFO 3880 --- [afka-consumer-1] o.a.k.c.c.internals.ConsumerCoordinator  : Setting newly assigned partitions [s-0, s-1] for group g2
2017-03-12 07:17:19.658  INFO 3880 --- [afka-consumer-1] o.s.k.l.KafkaMessageListenerContainer    : partitions assigned:[r-0]
2017-03-12 07:17:25.000  INFO 3880 --- [afka-consumer-1] o.s.k.l.KafkaMessageListenerContainer    : partitions revoked:[s-0, s-1]
2017-03-12 07:17:26.000  INFO 3880 --- [      consumer1] o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=c1, groupId=g3] Revoking previously assigned partitions [q-0]
2017-03-12 07:17:26.001  INFO 3880 --- [      consumer1] o.s.k.l.KafkaMessageListenerContainer    : partitions revoked: [q-0]
2017-03-12 07:17:29.000  INFO 3880 --- [      consumer1] o.s.k.l.KafkaMessageListenerContainer    : partitions assigned: [q-1]"""


def test_no_group_is_guessed(tmp_path):
    """A line naming no group takes one only from its own complete thread; a Spring Boot
    thread cut to 15 characters ties nothing (two containers share "afka-consumer-1")."""
    rows = _rows(tmp_path, "client-log", SPRING_BOOT, name="app.log")
    good = [(r["__line"], r["event"], r["group_id"], r["member_id"], r["topic"], r["partition"])
            for r in rows if "__error" not in r]
    assert good == [(1, "assigned", "g1", "app", "r", 0), (2, "assigned", "g2", "app", "s", 0),
                    (2, "assigned", "g2", "app", "s", 1), (5, "revoked", "g3", "c1", "q", 0),
                    (7, "assigned", "g3", "c1", "q", 1)]
    bad = [r for r in rows if "__error" in r]
    assert [r["__line"] for r in bad] == [4]  # line 3 echoes line 1 (same thread, 22 ms)
    assert "[afka-consumer-1] may be cut short" in bad[0]["__error"]
    assert bad[0]["__error"].endswith("set adapters.group")


def test_a_prefix_without_group_takes_adapters_group(tmp_path):
    """assign() consumers log "[Consumer clientId=C, groupId=]": the member is C, the group
    only adapters.group (never a group seen on another line)."""
    text = ("2023-01-16 23:00:00,000 INFO  [main] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=c2, groupId=g] Revoke previously assigned partitions t-0\n"
            "2023-01-16 23:00:05,000 ERROR [worker] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=c1, groupId=] Offset commit failed on partition t-1 at offset 5: The coordinator is not available.")
    rows = _rows(tmp_path, "client-log", text, name="app.log")
    assert [r.get("__error", "")[:22] for r in rows] == ["", "consumer group unknown"]
    rows = _rows(tmp_path, "client-log", text, {"group": "manual"}, name="app.log")
    assert [(r["group_id"], r["member_id"], r["event"]) for r in rows] == [
        ("g", "c2", "revoked"), ("manual", "c1", "commit_failed")]


# kafka-images#343's kafka-python line, in two layouts that print the thread: kafka-python's
# HeartbeatThread, which logs it, is named group_id + '-heartbeat' (kafka/coordinator/base.py,
# 1.4+); python-json-logger writes the format's fields as JSON keys (asctime, threadName)
POLL_EXPIRED = "Heartbeat poll expired, leaving group"
PY_THREAD = f"2024-07-30 11:06:58,309 [os_ai_req_grp_3-heartbeat] WARNING - {POLL_EXPIRED}"
PY_JSON = json.dumps({"asctime": "2024-07-30 11:06:58,309", "threadName": "os_ai_req_grp_3-heartbeat",
                      "levelname": "WARNING", "message": POLL_EXPIRED})


@pytest.mark.parametrize("line", [PY_THREAD, PY_JSON])
def test_a_heartbeat_thread_names_its_group(tmp_path, line):
    rows = _rows(tmp_path, "client-log", line, name="worker.log")
    assert [(r["event"], r["group_id"], r["member_id"], r["ts"], r["detail"]) for r in rows] == [
        ("left_group", "os_ai_req_grp_3", "worker", 1722337618309, "poll timeout")]


def test_spring_group_prefix_and_the_clients_line_are_one_event(tmp_path):
    # hifly81/kafka-spring-demo's Spring line after the client's own line for the same
    # assignment (Spring Kafka 2.3+ logs '<group>: partitions assigned: …' in its callback,
    # on the same thread, right after the client's 'Adding newly assigned partitions')
    text = ("2023-11-14 12:31:08.340  INFO 58556 --- [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : "
            "[Consumer clientId=consumer-order-app-group-1, groupId=order-app-group] Adding newly assigned partitions: orders-0\n"
            "2023-11-14 12:31:08.348  INFO 58556 --- [ntainer#0-0-C-1] o.s.k.l.KafkaMessageListenerContainer    : "
            "order-app-group: partitions assigned: [orders-0]")
    rows = _rows(tmp_path, "client-log", text, name="app.log")
    assert [(r["__line"], r["event"], r["group_id"], r["member_id"]) for r in rows] == [
        (1, "assigned", "order-app-group", "consumer-order-app-group-1")]


def test_a_coordinator_join_inside_a_kibana_csv_export(tmp_path):
    """No public CSV export holding a join was found: dell/iDRAC-Telemetry-Reference-Tools#186's
    broker lines (Kafka 3.x, a console consumer joining) wrapped the way Kibana Discover's CSV
    export writes them (a header naming @timestamp and message, its own date format, newest
    first). The join and the rebalance come out in time order with the records' lines."""
    text = "\n".join([
        '"@timestamp","host.name","message"',
        '"May 18, 2026 @ 12:15:41.406","kafka-0","[2026-05-18 12:15:41,406] INFO [GroupCoordinator 0]: Stabilized group console-consumer-84073 generation 1 (__consumer_offsets-43) with 1 members (kafka.coordinator.group.GroupCoordinator)"',
        '"May 18, 2026 @ 12:15:41.404","kafka-0","[2026-05-18 12:15:41,404] INFO [GroupCoordinator 0]: Dynamic member with unknown member id joins group console-consumer-84073 in Empty state. Created a new member id console-consumer-258252e6-f62a-4130-ae6b-3543542e3313 and request the member to rejoin with this id. (kafka.coordinator.group.GroupCoordinator)"'])
    for fmt in ("coordinator-log", "auto"):
        (tmp_path / fmt).mkdir()
        rows = _rows(tmp_path / fmt, fmt, text, name="export.csv")
        assert [(r["__line"], r["event"], r["group_id"], r["member_id"], r["ts"]) for r in rows] == [
            (3, "joined_group", "console-consumer-84073", "console-consumer", 1779106541404),
            (2, "assigned", "console-consumer-84073", None, 1779106541406)]
