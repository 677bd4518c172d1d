"""The hold-and-fire peers' own parts that run without RQ and arq: the postback bodies they POST (signed
ES256 with the pipeline's key, as the verifying receiver checks them), the programs the peers' venv runs
(valid Python, with the Redis URL and due time in them), and the wait on the receiver's /stats (a real
HTTP server on loopback)."""

import json
import threading
import time
import unittest

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from bench_peers import WORKER_SOURCE, arq_enqueue_source, rq_enqueue_source, signed_bodies, wait_for
from harness import b64url_decode
from tests.support import JSONServer


class SignedBodyTests(unittest.TestCase):
    def test_each_body_is_a_distinct_postback_signed_with_the_key(self):
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        bodies = signed_bodies(3, pem, "attribution-pipeline/0", "example.adattributionkit", 1108187390)
        identifiers = set()
        for body in bodies:
            document = json.loads(body)
            self.assertEqual(document["coarse-conversion-value"], "high")
            header, payload, signature = document["jws-string"].split(".")
            self.assertEqual(json.loads(b64url_decode(header)), {"alg": "ES256", "kid": "attribution-pipeline/0"})
            raw = b64url_decode(signature)
            self.assertEqual(len(raw), 64)
            der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            key.public_key().verify(der, f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
            claims = json.loads(b64url_decode(payload))
            self.assertEqual(claims["ad-network-identifier"], "example.adattributionkit")
            self.assertEqual(claims["advertised-item-identifier"], 1108187390)
            identifiers.add(claims["postback-identifier"])
        self.assertEqual(len(identifiers), 3)


class PeerProgramTests(unittest.TestCase):
    def test_the_programs_compile_with_the_url_and_due_time_in_them(self):
        compile(WORKER_SOURCE, "peerjobs.py", "exec")
        for source in (rq_enqueue_source, arq_enqueue_source):
            program = source("redis://127.0.0.1:6390/0", 1700000000.5)
            compile(program, source.__name__, "exec")
            self.assertIn("'redis://127.0.0.1:6390/0'", program)
            self.assertIn("fromtimestamp(1700000000.5,", program)


class WaitTests(unittest.TestCase):
    def setUp(self):
        self.server = JSONServer({"accepted": 5})
        self.receiver = self.server.url

    def tearDown(self):
        self.server.close()

    def test_until_the_receiver_has_the_target(self):
        threading.Timer(0.3, lambda: self.server.answer.update(accepted=8)).start()
        started = time.time()
        done = wait_for(self.receiver, 8, timeout=10)
        self.assertGreaterEqual(done - started, 0.25)

    def test_a_target_never_reached_ends_the_run(self):
        with self.assertRaisesRegex(SystemExit, "timed out: 5 of 6"):
            wait_for(self.receiver, 6, timeout=0.3)


if __name__ == "__main__":
    unittest.main()
