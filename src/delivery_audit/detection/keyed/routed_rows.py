"""Pass 1's routed rows out: per identity, the write-side rules, seq_gap's range and the
(group, identity) pairs of the states (with rule 12's ``past``); per broker copy,
dup_write, zombie_write, the key's moves and the first copy in each partition; per ledger
row, the broker copy at its record and its identity's ``judged`` (to the consumer side),
its success (to the states) and, at an aborted record, an aborted read."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...config import AuditConfig
from ...sqlexpr import BEFORE, WHOLE, X
from .. import routes, transactions, write_side
from ..facts import Facts
from .layout import BROKER, ID, KEY, KINDS, LEDGER, MASK_BITS, TPO, A, K, L, P, W, group_slots


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
    for t, slots in group_slots(facts).items():
        value = S.fn("array", *[pair(g, S.raw(
            f"coalesce(shiftright(past_all{i // MASK_BITS}, {i % MASK_BITS}) & 1 = 1, false)"))
            for g, i in slots])
        case = S.when(S.col("topic") == t, value) if case is None\
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


def identity_rows(ids: DataFrame, config: AuditConfig, facts: Facts) -> DataFrame:
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


def copy_rows(sb: DataFrame, ids: DataFrame) -> DataFrame:
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


def ledger_out(lm: DataFrame, sb: DataFrame, ids: DataFrame, config: AuditConfig,
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
