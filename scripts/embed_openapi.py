#!/usr/bin/env python3
"""Writes Services/ingest/OpenAPIDocument+Text.swift: the OpenAPI document (Services/ingest/openapi.json,
the file people edit and clients read) as one raw string literal, which ingest serves and prints.

Usage: scripts/embed_openapi.py [--check]

Why not SwiftPM's `.embedInCode`: that writes the 253 kB document as an array of byte literals, and a
debug build spent 80 s of CPU compiling it, a sixth of a newcomer's first build; a string literal
compiles in a tenth of a second. With --check, exits 1 (and says so) when the Swift file is stale; the
test command runs it, and a Swift test holds the served document to the file."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "Services/ingest/openapi.json"
SWIFT = ROOT / "Services/ingest/OpenAPIDocument+Text.swift"


def delimiter(text: str) -> str:
    """The fewest `#` that neither end the literal early nor start an interpolation inside it."""
    count = 1
    while f'"{"#" * count}' in text or f"\\{'#' * count}" in text:
        count += 1
    return "#" * count


def rendered(document: str) -> str:
    body = document[:-1] if document.endswith("\n") else document
    hashes = delimiter(body)
    return (
        "// swift-format-ignore-file\n"
        "// Written by scripts/embed_openapi.py from openapi.json beside this file; edit that, then run it.\n"
        "extension OpenAPIDocument {\n"
        "    /// The document as the file holds it, without its final newline.\n"
        f'    static let json = {hashes}"""\n{body}\n"""{hashes}\n'
        "}\n"
    )


def main() -> int:
    expected = rendered(DOCUMENT.read_text(encoding="utf-8"))
    if "--check" in sys.argv[1:]:
        if not SWIFT.exists() or SWIFT.read_text(encoding="utf-8") != expected:
            print(f"{SWIFT.relative_to(ROOT)} is stale: run scripts/embed_openapi.py", file=sys.stderr)
            return 1
        return 0
    SWIFT.write_text(expected, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
