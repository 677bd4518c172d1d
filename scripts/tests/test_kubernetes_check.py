"""The Kubernetes check's rules catch each thing they claim to: a Deployment as the manifests write it
passes, and each fault put into it is named."""

import copy
import os
import unittest

import kubernetes_check

UIDS = {"ingest": 10001, "dispatcher": 10005}
READS = {"HTTP_HOST", "HTTP_PORT", "REDIS_URL", "REDIS_PASSWORD_FILE", "SIGNING_KEY_FILE"}


def deployment(name="ingest", port=8080):
    container = {
        "name": name,
        "args": [name],
        "ports": [{"name": "http", "containerPort": port}],
        "env": [{"name": "HTTP_HOST", "value": "0.0.0.0"}, {"name": "HTTP_PORT", "value": str(port)}],
        "envFrom": [{"configMapRef": {"name": f"{name}-redis-abc"}}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "redis", "mountPath": "/run/secrets/redis"}],
    }
    pod = {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": UIDS[name],
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": [{"name": "redis", "secret": {"secretName": f"redis-{name}"}}],
    }
    return {"spec": {"template": {"spec": pod}}}


CONFIG = {
    "ingest-redis-abc": {
        "REDIS_URL": "redis://ingest@redis:6379/0",
        "REDIS_PASSWORD_FILE": "/run/secrets/redis/password",
    }
}


def problems(item, name="ingest", config=CONFIG):
    return kubernetes_check.check_service(name, item, config, READS, UIDS)


class CheckServiceTests(unittest.TestCase):
    def test_the_manifests_form_passes(self):
        self.assertEqual(problems(deployment()), [])

    def test_each_fault_is_named(self):
        def broken(change):
            item = copy.deepcopy(deployment())
            change(item["spec"]["template"]["spec"])
            return " ".join(problems(item))

        container = lambda pod: pod["containers"][0]  # noqa: E731
        cases = {
            "does not read": lambda pod: container(pod)["env"].append({"name": "BATCH_SIZ", "value": "1"}),
            "under none of its mounts": lambda pod: container(pod).update(volumeMounts=[]),
            "readinessProbe": lambda pod: container(pod)["readinessProbe"]["httpGet"].update(path="/health"),
            "livenessProbe": lambda pod: container(pod)["livenessProbe"]["httpGet"].update(port=9090),
            "runAsUser": lambda pod: pod["securityContext"].update(runAsUser=10002),
            "runAsNonRoot": lambda pod: pod["securityContext"].pop("runAsNonRoot"),
            "readOnlyRootFilesystem": lambda pod: container(pod)["securityContext"].update(
                readOnlyRootFilesystem=False
            ),
            "capabilities": lambda pod: container(pod)["securityContext"].update(capabilities={"drop": ["NET_RAW"]}),
            "signing keys": lambda pod: pod["volumes"].append({"name": "s", "secret": {"secretName": "signing-keys"}}),
            "not its executable": lambda pod: container(pod).update(args=["verifier"]),
        }
        for expected, change in cases.items():
            with self.subTest(expected):
                self.assertIn(expected, broken(change))

    def test_the_dispatcher_must_hold_the_signing_keys(self):
        item = deployment("dispatcher", 9090)
        config = {"dispatcher-redis-abc": {}}
        self.assertIn("signing keys", " ".join(problems(item, "dispatcher", config)))

    def test_image_users_follow_the_dockerfile(self):
        users = kubernetes_check.image_users(os.path.join(kubernetes_check.ROOT, "Dockerfile"))
        self.assertEqual(users["pipeline"], 10000)
        self.assertEqual(users["ingest"], 10001)
        self.assertEqual(users["admin"], 10008)


if __name__ == "__main__":
    unittest.main()
