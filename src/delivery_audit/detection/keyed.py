"""Pass 1, by key: the send attempts, the broker rows that form an identity and the ledger
rows (rule 10 resolved) of every key, hash partitioned by (topic, key) and sorted by
(identity, partition, offset), as two leaves: sends and broker rows, ledger rows and the
marks of rule 12. Everything in the pass streams over that order, with no other shuffle
or sort:

* **identities** — one sort-based aggregation of the send and broker rows: what the
  write-side rules and the states need (first send, attempts, acks, copies, the time
  that judges it: rule 8), whether this window judges it, and per group consuming its
  topic whether the group went past every copy (rule 12: its attempts and commits, from
  the facts, or a ``skipped`` mark on the copy's record);
* **copies** — each broker row with the previous copy of its key (key_partition_split,
  the first copy in a partition for write_reorder, the first copy for dup_write) and its
  identity (a merge join);
* **ledger rows** — each with the broker copy at its record (its timestamp, for delivery
  latency) and its identity's ``judged`` flag (merge joins);
* per key, the identities in seq order: seq_gap's range and each identity's predecessor.

Transactions (contract §9, transactions.py): broker rows carry their outcome; an aborted
row judges its identity (rule 25) and may be a zombie write, but it is no copy (rule 22),
and a ledger row at it is an aborted read, otherwise treated like an unresolved row.

The pass ends by emitting routed rows (routes.py): the write side's anomaly rows, the
ledger rows (to the consumer side), the (group, identity) pairs of the states and the
successful processings (to the states and dup_effect), the first copy of each identity
in a partition (write_reorder) and the key moves (key_partition_split: the first per key).

Size: pass 1 is one plan (its leaves, aggregation, joins and routed rows share one sort);
split, its parts would have to pass the sort's order and columns between modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..config import AuditConfig
from ..core.window import AuditWindow
from ..sqlexpr import BEFORE, WHOLE, X
from . import routes, transactions, write_side
from .evidence import ANOMALY_TYPE
from .facts import Facts

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
P = routes.Kind("p", "group_id:string,topic:string,key_null:boolean,key_v:string,"
                f"seq:bigint,is_pair:boolean,n_copies:bigint,first_copy:{AT},"
                f"any_acked:boolean,acked_inside:boolean,acked_below:boolean,acked_at:{AT},"
                f"below_at:{AT},first_send_ts:timestamp,judged_ts:timestamp,past:boolean,"
                "partition:int,offset:bigint,member_id:string,started_ts:timestamp,"
                "finished_ts:timestamp")
W = routes.Kind("w", "topic:string,key_null:boolean,key_v:string,seq:bigint,"
                "partition:int,offset:bigint,timestamp:timestamp,judged:boolean")
K = routes.Kind("k", f"anomaly:{ANOMALY_TYPE},key_null:boolean,key_v:string,seq:bigint,"
                "partition:int,offset:bigint")
KINDS = (A, L, P, W, K)


def _ts(value) -> X:
    return S.lit(value.replace(tzinfo=None).isoformat(sep=" ")).cast("timestamp")


def _group_slots(facts: Facts) -> dict[str, list[tuple[str, int]]]:
    """Per consumed topic, its groups with their index (a pair's bit in the masks)."""
    return {t: [(g, i) for i, g in enumerate(facts.groups_of(t))]
            for t in facts.consumed_topics()}


def _mask_count(facts: Facts) -> int:
    widest = max((len(v) for v in _group_slots(facts).values()), default=0)
    return max(1, -(-widest // MASK_BITS))


# -- the rows in ---------------------------------------------------------------------

_KEY_PARTS = {"key_null": S.col("key").isNull(), "key_v": S.coalesce(S.col("key"), S.lit(""))}
# the last fields of each leaf (ack_ts, producer_id, error; generation) only travel to the
# published evidence (evidence_table.py)
_SB = {"send_ts": "timestamp", "attempt": "int", "status": "string", "idempotent": "boolean",
       "inside": "boolean", "below": "boolean", "timestamp": "timestamp",
       "ack_ts": "timestamp", "producer_id": "string", "error": "string",
       # a broker row's transaction (transactions.py): outcome, pid, epoch, closing marker,
       # and the higher epoch its pid wrote before it (zombie_write)
       "txn": "string", "pid": "bigint", "producer_epoch": "int",
       **{k: v for k, v in transactions.TXN_COLUMNS.items() if k != "txn"}}
_LM = {"group_id": "string", "member_id": "string", "started_ts": "timestamp",
       "finished_ts": "timestamp", "outcome": "string", "_mask": "int", "_mark": "bigint",
       "generation": "int", "isolation": "string"}


def _aligned(df: DataFrame, side: int, columns: dict[str, str], given: dict[str, X]) -> DataFrame:
    """One side's rows in a leaf's columns (the other sides' columns null)."""
    out = [given.get(c, S.col(c)).alias(c) for c in (*ID, "partition", "offset")]
    out.append(S.lit(side).cast("tinyint").alias("_side"))
    for name, dtype in columns.items():
        out.append(given.get(name, S.lit(None)).cast(dtype).alias(name))
    return S.select(df, *out)


def _send_rows(sends: DataFrame, facts: Facts) -> DataFrame:
    ranges = S.map_literal(
        [(S.struct(t=t, p=p), S.struct(lo=S.lit(lo).cast("bigint"), hi=S.lit(hi).cast("bigint")))
         for (t, p), (lo, hi) in sorted(facts.ranges.items())],
        "map<struct<t:string,p:int>,struct<lo:bigint,hi:bigint>>")
    r = S.fn("element_at", ranges, S.raw("named_struct('t', topic, 'p', partition)"))
    acked = S.col("status") == "acked"
    return _aligned(sends, SEND, _SB, {
        **_KEY_PARTS,
        "send_ts": S.col("send_ts"), "attempt": S.col("attempt"), "status": S.col("status"),
        "idempotent": S.col("idempotent"), "ack_ts": S.col("ack_ts"),
        "producer_id": S.col("producer_id"), "error": S.col("error"),
        "inside": acked & (S.col("offset") >= S.raw(f"{r.sql}.lo"))
        & (S.col("offset") < S.raw(f"{r.sql}.hi")),
        "below": acked & (S.col("offset") < S.raw(f"{r.sql}.lo")),
    })


def _broker_rows(broker: DataFrame) -> DataFrame:
    """The data rows that form an identity (a control row forms none: rule 20), with their
    transaction (``broker``: transactions.outcomes' rows); aborted ones included (they
    judge an identity, rule 25, and may be zombie writes; they are no copies, rule 22)."""
    return _aligned(broker.filter(F.col("seq").isNotNull() & F.col("control").isNull()),
                    BROKER, _SB,
                    {**_KEY_PARTS, "timestamp": S.col("timestamp"),
                     "producer_id": S.col("producer_id"), "txn": S.col("txn"),
                     "pid": S.col("pid"), "producer_epoch": S.col("producer_epoch"),
                     "marker": S.col("marker"), "higher": S.col("higher")})


_LEDGER = ("group_id", "member_id", "started_ts", "finished_ts", "outcome", "generation",
           "isolation")


def _ledger_given(key_null: X, key_v: X, seq: X) -> dict[str, X]:
    # an unresolved row (no seq: no broker record at its offset) forms no identity; its own
    # "key" spreads such rows by offset instead of piling them on one task
    spread = S.raw("concat('#', CAST(offset AS STRING))")
    return {"key_null": S.when(seq.isNull(), S.lit(True)).otherwise(key_null),
            "key_v": S.when(seq.isNull(), spread).otherwise(key_v), "seq": seq,
            **{c: S.col(c) for c in _LEDGER}}


def _mark_bits(facts: Facts) -> tuple[X, X]:
    """A ``skipped`` row's (mask column, bit) for its (topic, group)."""
    chunk, bit = S.lit(None).cast("int"), S.lit(None).cast("bigint")
    pairs = [(t, g, i) for t, slots in _group_slots(facts).items() for g, i in slots]
    if pairs:
        cond = [(S.col("topic") == t) & (S.col("group_id") == g) for t, g, _ in pairs]
        chunk = S.when(cond[0], S.lit(pairs[0][2] // MASK_BITS))
        bit = S.when(cond[0], S.lit(1 << (pairs[0][2] % MASK_BITS)).cast("bigint"))
        for c, (_, _, i) in zip(cond[1:], pairs[1:], strict=True):
            chunk = chunk.when(c, S.lit(i // MASK_BITS))
            bit = bit.when(c, S.lit(1 << (i % MASK_BITS)).cast("bigint"))
    return chunk, bit


def ledger_rows(ledger: DataFrame, broker: DataFrame, facts: Facts) -> DataFrame:
    """The ledger rows of the pass (rule 10: a row without seq takes key and seq from the
    broker record at its offset; unresolved without one) and the marks of rule 12 (a row
    with outcome ``skipped`` marks the broker record at its offset, whatever key and seq it
    names itself). Without such rows (``facts`` counted them) the broker is not looked up."""
    plain = facts.rows_without_seq == 0 and facts.skipped_rows == 0
    own = ledger if plain else ledger.filter(F.col("seq").isNotNull())
    rows = _aligned(own, LEDGER, _LM, _ledger_given(*_KEY_PARTS.values(), S.col("seq")))
    if plain:
        return rows
    need = ledger.filter(F.col("seq").isNull() | (F.col("outcome") == "skipped"))
    # a control row's key and seq are ignored (rule 20): a row at a marker is unresolved
    record = broker.select("topic", "partition", "offset", F.col("key").alias("b_key"),
                           F.when(F.col("control").isNull(), F.col("seq")).alias("b_seq"))
    looked = need.join(record.hint("merge"), on=["topic", "partition", "offset"], how="left")
    b_null, b_v = S.col("b_key").isNull(), S.coalesce(S.col("b_key"), S.lit(""))
    as_ledger = _aligned(looked.filter(F.col("seq").isNull()), LEDGER, _LM,
                         _ledger_given(b_null, b_v, S.col("b_seq")))
    chunk, bit = _mark_bits(facts)
    marks = _aligned(
        looked.filter((F.col("outcome") == "skipped") & F.col("b_seq").isNotNull()), MARK, _LM,
        {"key_null": b_null, "key_v": b_v, "seq": S.col("b_seq"),
         "group_id": S.col("group_id"), "_mask": chunk, "_mark": bit})
    return rows.unionByName(as_ledger).unionByName(marks)


def _leaf(df: DataFrame) -> DataFrame:
    """Rows hash partitioned by key and sorted by (identity, partition, offset, side): a
    leaf whose order every step of the pass streams over."""
    return routes.checkpoint(df.repartition(*[F.col(c) for c in KEY])
                             .sortWithinPartitions(*ORDER))


# -- identities ----------------------------------------------------------------------

_AT = "named_struct('partition', partition, 'offset', offset)"


def _when(side: int, value: str) -> str:
    return f"IF(_side = {side}, {value}, NULL)"


_COPY = f"_side = {BROKER} AND txn <> 'aborted'"  # an aborted row is no copy (rule 22)


def _copy(value: str) -> str:
    return f"IF({_COPY}, {value}, NULL)"


def _reach_bits(facts: Facts, chunk: int) -> X:
    """A broker copy's groups (of its topic, in mask ``chunk``) that went past it by their
    attempts and commits (rule 12), as bits."""
    reach = S.map_literal(
        [(S.struct(g=g, t=t, p=p), S.lit(o).cast("bigint"))
         for (g, t, p), o in sorted(facts.reach.items())],
        "map<struct<g:string,t:string,p:int>,bigint>")
    case = None
    for t, slots in _group_slots(facts).items():
        terms = [f"IF(coalesce(element_at({reach.sql}, named_struct('g', "
                 f"{S.lit(g).sql}, 't', topic, 'p', partition)) > offset, false), "
                 f"{1 << (i % MASK_BITS)}L, 0L)"
                 for g, i in slots if i // MASK_BITS == chunk]
        if terms:
            value = S.raw(" | ".join(terms))
            cond = S.col("topic") == t
            case = S.when(cond, value) if case is None else case.when(cond, value)
    return S.lit(0).cast("bigint") if case is None else case.otherwise(S.lit(0).cast("bigint"))


def identities(sb: DataFrame, lm: DataFrame, window: AuditWindow, facts: Facts) -> DataFrame:
    """One row per identity seen in sends or broker: its figures, whether this window judges
    it, and per mask the groups that went past every copy (a leaf: three steps read it)."""
    chunks = range(_mask_count(facts))
    marks = (lm.filter(F.col("_side") == MARK)
             .groupBy(*TPO).agg(*[F.expr(f"bit_or(IF(_mask = {c}, _mark, NULL))").alias(f"_m{c}")
                                 for c in chunks]))
    copies = sb.hint("merge").join(marks.hint("merge"), on=TPO, how="left")
    # rule 23: an aborted attempt is not acked, and it is a retry's sign (rule 14)
    acked, failed = "status = 'acked'", "status IN ('failed', 'timeout', 'aborted')"
    figures = {
        "first_send_ts": f"min({_when(SEND, 'send_ts')})",
        "n_send_rows": f"count({_when(SEND, '1')})",
        "max_attempt": f"max({_when(SEND, 'coalesce(attempt, 1)')})",
        "any_failed": f"max({_when(SEND, failed)})",
        "any_acked": f"coalesce(max({_when(SEND, acked)}), false)",
        "any_idempotent": f"max({_when(SEND, 'coalesce(idempotent, false)')})",
        "acked_inside": f"coalesce(max({_when(SEND, 'coalesce(inside, false)')}), false)",
        "acked_below": f"coalesce(max({_when(SEND, 'coalesce(below, false)')}), false)",
        "inside_at": f"min(IF(_side = {SEND} AND inside, {_AT}, NULL))",
        "below_at": f"min(IF(_side = {SEND} AND below, {_AT}, NULL))",
        "acked_at": f"min(IF(_side = {SEND} AND {acked}, {_AT}, NULL))",
        "n_copies": f"count({_copy('1')})",
        # rule 25: aborted copies judge an identity with no send row
        "first_broker_ts": f"min({_when(BROKER, 'timestamp')})",
        "first_copy": f"min({_copy(_AT)})",
    }
    for c in chunks:
        past = f"{_reach_bits(facts, c).sql} | coalesce(_m{c}, 0L)"
        figures[f"past_all{c}"] = f"bit_and({_copy(past)})"
    grouped = copies.groupBy(*ID).agg(*[F.expr(v).alias(k) for k, v in figures.items()])
    judged_ts = S.coalesce(S.col("first_send_ts"), S.col("first_broker_ts"))
    judged = S.coalesce((judged_ts >= _ts(window.start)) & (judged_ts < _ts(window.end)),
                        S.lit(False))
    return routes.checkpoint(S.select(grouped, "*", judged_ts.alias("judged_ts"),
                                      judged.alias("judged")))


# -- the rows out --------------------------------------------------------------------

def _pairs(facts: Facts) -> X:
    """A judged identity's (group, identity) pairs: one per group consuming its topic
    (rule 9), with whether the group went past every copy; with no such group one row
    without a group (it still counts as judged)."""
    base = dict(topic=S.col("topic"), key_null=S.col("key_null"), key_v=S.col("key_v"),
                seq=S.col("seq"), is_pair=S.lit(True), n_copies=S.col("n_copies"),
                first_copy=S.col("first_copy"), any_acked=S.col("any_acked"),
                acked_inside=S.col("acked_inside"), acked_below=S.col("acked_below"),
                acked_at=S.col("acked_at"), below_at=S.col("below_at"),
                first_send_ts=S.col("first_send_ts"), judged_ts=S.col("judged_ts"))

    def pair(group: str | None, past: X) -> X:
        g = S.lit(group).cast("string")
        payload = S.struct(group_id=g, **base, past=past, partition=S.lit(None),
                           offset=S.lit(None), member_id=S.lit(None), started_ts=S.lit(None),
                           finished_ts=S.lit(None))
        return routes.emit(KINDS, P, g, S.col("topic"), routes.route_hash("key_v", "seq"),
                           payload)

    case = None
    for t, slots in _group_slots(facts).items():
        value = S.fn("array", *[pair(g, S.raw(
            f"coalesce(shiftright(past_all{i // MASK_BITS}, {i % MASK_BITS}) & 1 = 1, false)"))
            for g, i in slots])
        case = S.when(S.col("topic") == t, value) if case is None \
            else case.when(S.col("topic") == t, value)
    lone = S.fn("array", pair(None, S.lit(False)))
    all_pairs = lone if case is None else case.otherwise(lone)
    return S.when(S.col("judged"), all_pairs).otherwise(
        S.raw(f"CAST(array() AS array<{_row_type()}>)"))


def _row_type() -> str:
    fields = ["_r1:string", "_r2:string", "_r3:int"]
    fields += [f"{k.name}:{k.type}" for k in KINDS]
    return "struct<" + ",".join(fields) + ">"


_ANYWHERE = routes.route_hash("key_v", "seq")


def _identity_rows(ids: DataFrame, config: AuditConfig, facts: Facts) -> DataFrame:
    """Per identity: the identity rules and the pairs of the states; per key
    in seq order (the leaf's order): seq_gap's range and the previous identity."""
    judged_seq = "IF(judged, seq, NULL)"
    ranged = S.select(ids, "*",
                      S.over(f"min({judged_seq})", KEY, ["seq"], WHOLE).alias("lo"),
                      S.over(f"max({judged_seq})", KEY, ["seq"], WHOLE).alias("hi"),
                      S.over("lag(seq)", KEY, ["seq"]).alias("prev_seq"))
    emit = routes.emit_when
    rows = [emit(KINDS, cond, A, S.lit(None), S.col("topic"), _ANYWHERE, a)
            for cond, a in write_side.identity_rules(config)]
    return routes.routed(ranged, rows, [_pairs(facts)])


def _copy_rows(sb: DataFrame, ids: DataFrame) -> DataFrame:
    """Per broker copy, with the key's previous copy (seq, partition, offset order) and its
    identity: dup_write, the key's moves and the first copy in each partition."""
    # the key's previous copy: aborted rows are none (rule 22), but they stay for
    # zombie_write (rule 24)
    prev = S.over("last(IF(txn <> 'aborted', named_struct('seq', seq, 'partition', "
                  "partition), NULL), true)", KEY, ["seq", "partition", "offset", "_side"],
                  BEFORE)
    copies = S.select(sb.filter(F.col("_side") == BROKER), "*", prev.alias("prev"))
    joined = copies.hint("merge").join(ids.hint("merge"), on=ID, how="inner")
    copy = S.col("txn") != "aborted"
    first_in_partition = copy & ~S.coalesce((S.col("prev.seq") == S.col("seq"))
                                            & (S.col("prev.partition") == S.col("partition")),
                                            S.lit(False))
    payload = S.struct(topic=S.col("topic"), key_null=S.col("key_null"), key_v=S.col("key_v"),
                       seq=S.col("seq"), partition=S.col("partition"), offset=S.col("offset"),
                       timestamp=S.col("timestamp"), judged=S.col("judged"))
    emit = routes.emit_when
    dup_cond, dup = write_side.dup_write()
    move_cond, move = write_side.key_move()
    zombie_cond, zombie = transactions.zombie_write()
    rows = [
        emit(KINDS, copy & dup_cond, A, S.lit(None), S.col("topic"), _ANYWHERE, dup),
        emit(KINDS, zombie_cond, A, S.lit(None), S.col("topic"), _ANYWHERE, zombie),
        emit(KINDS, copy & move_cond, K, S.lit(None), S.col("topic"),
             routes.route_hash("key_null", "key_v"),
             S.struct(anomaly=move, key_null=S.col("key_null"), key_v=S.col("key_v"),
                      seq=S.col("seq"), partition=S.col("partition"), offset=S.col("offset"))),
        emit(KINDS, first_in_partition, W, S.lit(None), S.col("topic"), S.col("partition"),
             payload),
    ]
    return routes.routed(joined, rows)


def _ledger_out(lm: DataFrame, sb: DataFrame, ids: DataFrame, config: AuditConfig,
                facts: Facts) -> DataFrame:
    """Per ledger row, the broker copy at its record and its identity's ``judged``: to the
    consumer side, and its successes to the states. A row at an aborted record (rule 22)
    goes on like an unresolved one (for "went past" and overlaps only), and its success is
    an aborted read."""
    copy_at = sb.filter(F.col("_side") == BROKER).select(
        *TPO, F.col("timestamp").alias("copy_ts"), "txn", "pid", "producer_epoch", "marker")
    rows = (lm.filter(F.col("_side") == LEDGER).hint("merge")
            .join(copy_at.hint("merge"), on=TPO, how="left")
            .join(ids.select(*ID, "judged").hint("merge"), on=ID, how="left"))
    rows = S.select(rows, "*", S.coalesce(S.col("txn") == "aborted", S.lit(False))
                    .alias("aborted"))
    judged = S.coalesce(S.col("judged"), S.lit(False))
    rows = S.select(rows, *[c for c in rows.columns if c != "judged"], judged.alias("judged"))
    judged = S.col("judged")
    kept = ~S.col("aborted")
    led = S.struct(**{c: S.col(c) for c in ("group_id", "member_id", "topic", "partition",
                                             "offset", "key_null", "key_v", "seq",
                                             "started_ts", "finished_ts", "outcome")},
                   resolved=S.col("seq").isNotNull() & kept, judged=judged,
                   copy_ts=S.when(kept, S.col("copy_ts")))
    success = S.struct(
        group_id=S.col("group_id"), topic=S.col("topic"), key_null=S.col("key_null"),
        key_v=S.col("key_v"), seq=S.col("seq"), is_pair=S.lit(False),
        n_copies=S.lit(None), first_copy=S.lit(None), any_acked=S.lit(None),
        acked_inside=S.lit(None), acked_below=S.lit(None), acked_at=S.lit(None),
        below_at=S.lit(None), first_send_ts=S.lit(None), judged_ts=S.lit(None),
        past=S.lit(None), partition=S.col("partition"), offset=S.col("offset"),
        member_id=S.col("member_id"), started_ts=S.col("started_ts"),
        finished_ts=S.col("finished_ts"))
    emit = routes.emit_when
    out = [
        emit(KINDS, S.lit(True), L, S.col("group_id"), S.col("topic"), S.col("partition"), led),
        emit(KINDS, judged & kept & (S.col("outcome") == "success"), P, S.col("group_id"),
             S.col("topic"), _ANYWHERE, success)]
    if facts.transactional:
        cond, aborted = transactions.aborted_read(
            transactions.isolation_cause(config, facts.group_ids))
        out.append(emit(KINDS, cond, A, S.lit(None), S.col("topic"), _ANYWHERE, aborted))
    return routes.routed(rows, out)


@dataclass(frozen=True)
class KeyedPass:
    exchanged: DataFrame  # the pass's routed rows, exchanged for pass 2
    identities: DataFrame  # a leaf: the judged counts read it
    sends_broker: DataFrame  # the leaves by key: send and broker rows (_side SEND, BROKER)
    ledger: DataFrame  # ledger rows and marks (_side LEDGER, MARK)


def keyed_pass(frames: dict[str, DataFrame], window: AuditWindow, config: AuditConfig,
               facts: Facts, outcomes: DataFrame | None = None) -> KeyedPass:
    """Pass 1 from the sources' valid rows to its routed rows, exchanged for pass 2; the
    identities and the pass's two leaves (the published evidence reads them).
    ``outcomes``: the broker rows with their transaction (transactions.outcomes; computed
    here when not given)."""
    ledger = frames["ledger"].filter(F.col("group_id").isin(*facts.group_ids)) \
        if facts.group_ids else frames["ledger"].limit(0)
    if outcomes is None:
        outcomes = transactions.outcomes(frames["broker"], facts)
    sb = _leaf(_send_rows(frames["sends"], facts).unionByName(_broker_rows(outcomes)))
    lm = _leaf(ledger_rows(ledger, frames["broker"], facts))
    ids = identities(sb, lm, window, facts)
    out = (_identity_rows(ids, config, facts)
           .unionByName(_copy_rows(sb, ids))
           .unionByName(_ledger_out(lm, sb, ids, config, facts)))
    return KeyedPass(routes.exchange(out), ids, sb, lm)
