"""Pass 1's layout: the sides of its leaves' rows (broker, send, ledger, mark), the
columns that name an identity and a key, the sort every step streams over, the group
slots of rule 12's masks, the kinds of routed rows the pass emits (routes.py): ``A``
anomaly rows, ``L`` ledger rows, ``K`` key moves; and the columns of the delivery states'
rows (``PAIR``: (group, identity) pairs; ``SUCCESS``: successful processings), which stay
in the pass's partitioning (delivery_states.py)."""

from __future__ import annotations

from .. import routes
from ..evidence import ANOMALY_TYPE
from ..facts import Facts

BROKER, SEND, LEDGER, MARK = 0, 1, 2, 3
ID = ["topic", "key_null", "key_v", "seq"]
KEY = ["topic", "key_null", "key_v"]
ORDER = [*ID, "partition", "offset", "_side"]  # the pass's sort
TPO = [*ID, "partition", "offset"]  # a record of an identity
MASK_BITS = 63  # groups per mask column: a topic consumed by more groups gets more masks
AT = "struct<partition:int,offset:bigint>"
A = routes.Kind("a", ANOMALY_TYPE[len("struct<"):-1])
L = routes.Kind("l", "group_id:string,member_id:string,topic:string,partition:int,"
                "offset:bigint,key_null:boolean,key_v:string,seq:bigint,"
                "started_ts:timestamp,finished_ts:timestamp,outcome:string,"
                "resolved:boolean,judged:boolean,copy_ts:timestamp")
# a group's first successful processing of an identity
FIRST = "struct<member_id:string,partition:int,offset:bigint,started_ts:timestamp>"
# a (group, identity) pair's row: its identity's figures, whether the group went past every
# copy (rule 12), its successful processings k and the first of them (delivery_states.py)
PAIR = (("group_id", "string"), ("topic", "string"), ("key_null", "boolean"),
        ("key_v", "string"), ("seq", "bigint"), ("n_copies", "bigint"),
        ("first_copy", AT), ("any_acked", "boolean"), ("acked_inside", "boolean"),
        ("acked_below", "boolean"), ("acked_at", AT), ("below_at", AT),
        ("first_send_ts", "timestamp"), ("judged_ts", "timestamp"), ("past", "boolean"),
        ("k", "bigint"), ("first", FIRST))
# a successful processing's row
SUCCESS = ("group_id", *ID, "partition", "offset", "member_id", "started_ts", "finished_ts")
K = routes.Kind("k", f"anomaly:{ANOMALY_TYPE},key_null:boolean,key_v:string,seq:bigint,"
                "partition:int,offset:bigint")
KINDS = (A, L, K)


def group_slots(facts: Facts) -> dict[str, list[tuple[str, int]]]:
    """Per consumed topic, its groups with their index (a pair's bit in the masks)."""
    return {t: [(g, i) for i, g in enumerate(facts.groups_of(t))]
            for t in facts.consumed_topics()}


def slot_count(facts: Facts) -> int:
    """The most groups consuming one topic (a pair's slot in the identity's figures)."""
    return max((len(v) for v in group_slots(facts).values()), default=0)


def mask_count(facts: Facts) -> int:
    widest = max((len(v) for v in group_slots(facts).values()), default=0)
    return max(1, -(-widest // MASK_BITS))
