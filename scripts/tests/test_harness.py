"""The shared helpers' own logic: partition names from the project's catalog, consumer-group progress
from XINFO GROUPS in both reply forms, slot ranges of CLUSTER NODES, base64url, redis-cli's login to a
Redis with ACLs on, the pipelined connection (the `redis` package) on a real redis-server, and the
runs' Redis and Redis Cluster as `attribution-bench redis` launches and drives them."""

import os
import shutil
import tempfile
import unittest

import harness
from harness import (
    Processes,
    RedisCluster,
    RedisConnection,
    RedisError,
    b64url_decode,
    caught_up,
    free_port,
    group_entry,
    partitioned,
    redis_cli,
    redis_login,
    slot_ranges,
    start_redis,
)
from tests import support


class CatalogTests(unittest.TestCase):
    def test_partition_names_come_from_the_catalog(self):
        # `attribution catalog --json` is the source (CommandLineTests holds it to the services); a
        # catalog already read is not read again.
        harness._catalogs[2] = {"partitions": {"count": 2, "tags": ["{p0.7}", "{p1}"]}}
        try:
            self.assertEqual(partitioned("events", 2), ["events:{p0.7}", "events:{p1}"])
        finally:
            del harness._catalogs[2]

    def test_without_binaries_it_says_so(self):
        saved = harness._bin_dir[0]
        harness._bin_dir[0] = None
        try:
            with self.assertRaisesRegex(RuntimeError, "use_binaries"):
                partitioned("events", 5)
        finally:
            harness._bin_dir[0] = saved


class GroupProgressTests(unittest.TestCase):
    def test_resp_and_json_replies(self):
        resp = [[b"name", b"verifier", b"lag", 0, b"pending", 0], [b"name", b"other", b"lag", 3, b"pending", 0]]
        self.assertEqual(group_entry(resp, "verifier")["name"], "verifier")
        self.assertTrue(caught_up(group_entry(resp, "verifier")))
        self.assertFalse(caught_up(group_entry(resp, "other")))
        printed = [{"name": "dispatcher", "lag": 0, "pending": 2}]
        self.assertFalse(caught_up(group_entry(printed, "dispatcher")))

    def test_a_missing_stream_or_group_is_not_done(self):
        self.assertIsNone(group_entry("ERR no such key", "verifier"))
        self.assertFalse(caught_up(group_entry([], "verifier")))
        # A lag Redis cannot tell (nil) is not 0.
        self.assertFalse(caught_up(group_entry([["name", "verifier", "lag", None, "pending", 0]], "verifier")))


class SlotRangeTests(unittest.TestCase):
    def test_ranges_single_slots_and_migrations(self):
        self.assertEqual(list(slot_ranges(["0-5460", "7", "[5461->-abc]"])), [(0, 5460), (7, 7)])


class Base64URLTests(unittest.TestCase):
    def test_unpadded_text_and_bytes(self):
        self.assertEqual(b64url_decode("eyJhIjoxfQ"), b'{"a":1}')
        self.assertEqual(b64url_decode(b"_-8"), b"\xff\xef")


@unittest.skipUnless(shutil.which("redis-server"), "needs redis-server")
class RedisLoginTests(unittest.TestCase):
    def setUp(self):
        support.use_built_binaries()

    def test_redis_cli_connects_as_the_login(self):
        # As the demo runs Redis: ACLs on, the default user off.
        with tempfile.TemporaryDirectory() as directory:
            acl = os.path.join(directory, "users.acl")
            with open(acl, "w") as f:
                f.write("user default off\nuser operator on >secret ~* &* +@all\n")
            with open(os.path.join(directory, "operator.password"), "w") as f:
                f.write("secret\n")
            processes, port = Processes(directory), free_port()
            redis_login("operator", os.path.join(directory, "operator.password"))
            try:
                start_redis(processes, port, directory, aof=False, host="127.0.0.1", options=["--aclfile", acl])
                self.assertEqual(redis_cli(port, "ACL", "WHOAMI"), "operator")
                harness._login.clear()
                self.assertIn("NOAUTH", redis_cli(port, "PING"))
            finally:
                harness._login.clear()
                processes.stop_all()


@unittest.skipUnless(shutil.which("redis-server"), "needs redis-server")
class RedisConnectionTests(unittest.TestCase):
    def setUp(self):
        support.use_built_binaries()

    def test_replies_come_as_redis_sends_them_and_an_error_stays_in_its_place(self):
        with tempfile.TemporaryDirectory() as directory:
            processes, port = Processes(directory), free_port()
            try:
                start_redis(processes, port, directory, aof=False, host="127.0.0.1")
                text, binary = RedisConnection(port), RedisConnection(port, binary=True)
                replies = text.pipeline(
                    [("SET", "k", "\u00e9"), ("XADD", "s", "1-1", "e", "x"), ("INCR", "k"), ("XINFO", "GROUPS", "s")]
                )
                self.assertEqual(replies[:2], ["OK", "1-1"])
                self.assertIsInstance(replies[2], RedisError)
                self.assertEqual(replies[3], [])
                binary.pipeline([("SET", "b", b"\xf5\x02")])
                self.assertEqual(binary.pipeline([("GET", "b")]), [b"\xf5\x02"])
                self.assertEqual(text.pipeline([("GET", "b")]), ["\ufffd\x02"])
                text.close()
                binary.close()
            finally:
                processes.stop_all()


@unittest.skipUnless(shutil.which("redis-server"), "needs redis-server")
class LaunchedRedisTests(unittest.TestCase):
    def setUp(self):
        support.use_built_binaries()

    def test_a_killed_redis_restarts_from_its_append_only_file(self):
        with tempfile.TemporaryDirectory() as directory:
            processes, port = Processes(directory), free_port()
            try:
                store = start_redis(processes, port, os.path.join(directory, "redis"))
                self.assertEqual(store.url, f"redis://127.0.0.1:{port}/0")
                redis_cli(port, "SET", "kept", "yes")
                first = store.pid
                store.kill()
                self.assertNotEqual(redis_cli(port, "PING"), "PONG")
                store.restart()
                self.assertNotEqual(store.pid, first)
                self.assertEqual(redis_cli(port, "GET", "kept"), "yes")
                with self.assertRaisesRegex(SystemExit, "unknown request fail-over for one Redis"):
                    store.request("fail-over")
            finally:
                processes.stop_all()
            self.assertNotEqual(redis_cli(port, "PING"), "PONG")  # stopping the launcher stopped Redis

    def test_a_cluster_fails_over_and_takes_a_replaced_node_back_as_a_replica(self):
        with tempfile.TemporaryDirectory() as directory:
            processes = Processes(directory)
            try:
                cluster = RedisCluster(processes, directory)
                self.assertEqual(len(cluster.primaries()), 3)
                killed = cluster.kill_primary()
                self.assertNotIn(killed, cluster.primaries())
                cluster.replace(killed)
                self.assertIsNotNone(cluster.replica_of(cluster.primaries()[0]))
                roles = sorted(role for _, role, _, _ in cluster.nodes())
                self.assertEqual(roles, ["master"] * 3 + ["replica"] * 3)
                source, target = cluster.primaries()[:2]
                listed = cluster.nodes()
                cluster.reshard(10, source, target)
                moved = cluster.nodes()
                before, after = ({port: slots for port, _, _, slots in nodes} for nodes in (listed, moved))
                self.assertNotEqual(before[target], after[target], f"{source} -> {target}: {listed} then {moved}")
            finally:
                processes.stop_all()
            self.assertFalse(any(redis_cli(port, "PING") == "PONG" for port in cluster.ports))


if __name__ == "__main__":
    unittest.main()
