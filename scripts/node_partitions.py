"""Partitions between the nodes of a Redis Cluster, for the cluster fault run (scripts/faults.py
--cluster --node-partitions): the nodes run apart (harness.RedisCluster(apart=True): a loopback address
each), and iptables drops what passes between chosen nodes while the services still reach every node.

- `isolate_primary`: a primary cut off from every other node (the majority, its replica among them) for
  longer than cluster-node-timeout while the campaign flows. The majority promotes its replica; the
  old primary keeps taking writes until it notices, and when the cut heals it rejoins as a replica and
  discards them. The fault measures that: the bytes of its replication stream past the point its replica
  was promoted from (writes acknowledged to their clients, then discarded).
- `cut_replica`: a primary cut off from its replica only. Nothing is failed over (the other primaries
  still see it); writes that wait for a replica (ingest's `WAIT`) cannot be confirmed meanwhile.

Each returns a record for the report and raises SystemExit when the cluster does not behave so."""

import re
import time

from harness import redis_cli


def offset(port, field="master_repl_offset"):
    match = re.search(rf"^{field}:(-?\d+)", redis_cli(port, "INFO", "replication"), re.M)
    return int(match.group(1)) if match else None


def role(port):
    match = re.search(r"^role:(\w+)", redis_cli(port, "INFO", "replication"), re.M)
    return match.group(1) if match else None


def serving_primary(cluster):
    """A primary that serves slots and has a replica attached, with that replica's port."""
    for port in cluster.primaries():
        replica = cluster.replica_of(port)
        if replica:
            return port, replica
    raise SystemExit("no primary with a replica to partition")


def isolate_primary(cluster, seconds, note):
    primary, replica = serving_primary(cluster)
    others = [port for port in cluster.ports if port != primary]
    cluster.cut(primary, others)
    cut_at = time.time()
    note(f"primary :{primary} cut off from every other node (its replica :{replica} among them) for {seconds} s")
    promoted_after = None
    while time.time() < cut_at + seconds:
        if promoted_after is None and role(replica) == "master":
            promoted_after = time.time() - cut_at
        time.sleep(0.05)
    # What the old primary wrote past the point its replica took over from (second_repl_offset is one
    # past the last byte it had received), read just before the heal: it has been discarded by then.
    took_over_at = offset(replica, "second_repl_offset")
    written = offset(primary)
    cluster.heal()
    if promoted_after is None:
        raise SystemExit(f"isolated primary :{primary}: its replica :{replica} was not promoted in {seconds} s")
    note(f"cut healed; :{replica} had taken over after {promoted_after:.1f} s")
    deadline = time.time() + 30
    while role(primary) != "slave" or "master_link_status:up" not in redis_cli(primary, "INFO", "replication"):
        if time.time() > deadline:
            raise SystemExit(
                f"the old primary :{primary} did not rejoin as a replica: {redis_cli(primary, 'INFO', 'replication')}"
            )
        time.sleep(0.1)
    cluster.wait_ok()
    cluster.wait_replicas()
    discarded = (
        max(0, written - (took_over_at - 1)) if written is not None and took_over_at and took_over_at > 0 else None
    )
    note(
        f"old primary :{primary} rejoined as a replica of :{replica}; its writes past the takeover, discarded: "
        f"{discarded} bytes of replication stream"
    )
    return {
        "fault": "primary cut off from the majority",
        "primary": primary,
        "replica": replica,
        "seconds": seconds,
        "promoted-after-s": round(promoted_after, 1),
        "discarded-replication-bytes": discarded,
    }


def cut_replica(cluster, seconds, note):
    primary, replica = serving_primary(cluster)
    cluster.cut(primary, [replica])
    note(f"primary :{primary} cut off from its replica :{replica} only, for {seconds} s")
    time.sleep(seconds)
    roles = (role(primary), role(replica))
    cluster.heal()
    cluster.wait_ok()
    cluster.wait_replicas()
    note(f"cut healed; roles during it: :{primary} {roles[0]}, :{replica} {roles[1]}")
    if roles != ("master", "slave"):
        raise SystemExit(f"a primary cut off from its replica only was failed over: {roles}")
    return {
        "fault": "primary cut off from its replica only",
        "primary": primary,
        "replica": replica,
        "seconds": seconds,
        "failed-over": False,
    }
