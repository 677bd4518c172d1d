"""Every requirement the scripts install is pinned to one version, and found by name or group."""

import unittest

from pins import pinned, requirements


class PinTests(unittest.TestCase):
    def test_every_requirement_is_pinned(self):
        for group in (None, "hostile", "bench", "dev"):
            for requirement in requirements(group):
                name, _, version = requirement.partition("==")
                self.assertTrue(name and version, requirement)

    def test_found_by_name_and_group(self):
        self.assertTrue(pinned("ruff").startswith("ruff=="))
        self.assertIn(pinned("schemathesis"), requirements("hostile"))
        with self.assertRaises(KeyError):
            pinned("left-pad")


if __name__ == "__main__":
    unittest.main()
