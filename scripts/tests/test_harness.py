"""The shared helpers' own logic: Redis Cluster's key hash, the partitions' hash tags (which must match
the Swift `Partitioning`), slot ranges of CLUSTER NODES, base64url."""

import unittest

from harness import b64url_decode, crc16, partition_tag, partitioned, slot_ranges


class KeyHashTests(unittest.TestCase):
    def test_crc16_is_redis_clusters(self):
        # The check value of CRC16-XMODEM, and the slot Redis's documentation gives for "123456789".
        self.assertEqual(crc16(b"123456789"), 0x31C3)
        self.assertEqual(crc16(b"123456789") % 16384, 12739)


class PartitionTagTests(unittest.TestCase):
    def test_each_tag_hashes_into_its_partitions_share_of_the_slots(self):
        for count in (1, 3, 16, 64):
            for index in range(count):
                tag = partition_tag(index, count)
                low, high = 16384 * index // count, 16384 * (index + 1) // count
                self.assertTrue(low <= crc16(tag.strip("{}").encode()) % 16384 < high, (count, index, tag))

    def test_tags_are_the_services(self):
        # As the services name partition 0 of 16 (their logs: `winner:settling:{p00.62}`).
        self.assertEqual(partition_tag(0, 16), "{p00.62}")
        self.assertEqual(partitioned("events", 2), ["events:" + partition_tag(0, 2), "events:" + partition_tag(1, 2)])


class SlotRangeTests(unittest.TestCase):
    def test_ranges_single_slots_and_migrations(self):
        self.assertEqual(list(slot_ranges(["0-5460", "7", "[5461->-abc]"])), [(0, 5460), (7, 7)])


class Base64URLTests(unittest.TestCase):
    def test_unpadded_text_and_bytes(self):
        self.assertEqual(b64url_decode("eyJhIjoxfQ"), b'{"a":1}')
        self.assertEqual(b64url_decode(b"_-8"), b"\xff\xef")


if __name__ == "__main__":
    unittest.main()
