"""Pass 1's layout: the sides of its leaves' rows (broker, send, ledger, mark), the
columns that name an identity and a key, the sort every step streams over, the group
slots of rule 12's masks, the kinds of routed rows the pass emits (routes.py): ``A``
anomaly rows, ``L`` ledger rows, ``K`` key moves; and the columns of the delivery states'
rows (``PAIR``: (group, identity) pairs; ``SUCCESS``: successful processings), which stay
in the pass's partitioning (delivery_states.py)."""

from __future__ import annotations

from ... import sqlexpr as S
from ...sqlexpr import X
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
# a successful processing's order (processing order), and the first of a group's successes
# of an identity as a struct of those fields in that order (its minimum is the first)
SUCCESS_ORDER = ("started_ts", "finished_ts", "partition", "offset", "member_id")
FIRST = ("struct<started_ts:timestamp,finished_ts:timestamp,partition:int,offset:bigint,"
         "member_id:string>")
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


def success_struct() -> X:
    """A success's :data:`SUCCESS_ORDER` fields as a struct (of type :data:`FIRST`)."""
    return S.struct(**{c: S.col(c) for c in SUCCESS_ORDER})


def group_slot(facts: Facts) -> X:
    """A row's slot among the groups of its topic (by its topic and group_id; null for a
    group that consumes no topic of the audit's)."""
    case = None
    for t, slots in group_slots(facts).items():
        for g, i in slots:
            cond = (S.col("topic") == t) & (S.col("group_id") == g)
            case = S.when(cond, S.lit(i)) if case is None else case.when(cond, S.lit(i))
    return S.lit(None).cast("int") if case is None else case


def slot_count(facts: Facts) -> int:
    """The most groups consuming one topic: the slots a pair's figures may take."""
    return max((len(v) for v in group_slots(facts).values()), default=0)


def mask_count(facts: Facts) -> int:
    return max(1, -(-slot_count(facts) // MASK_BITS))
