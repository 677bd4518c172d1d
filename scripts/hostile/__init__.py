"""Hostile input against the real pipeline. scripts/hostile.sh runs it from scripts/ with the bin dir:

    python3 -m hostile BIN OUTDIR [--examples N] [--fuzz-seconds S] [--idle N] [--hold S] [--rate R] [--seed N] [--skip-fuzz]

It copies the binaries it runs into OUTDIR/bin (someone may rebuild BIN meanwhile), starts a private
redis-server, the services and the reference receiver with scripts/harness.py's launcher, and then,
while a background thread keeps sending properly signed impressions and conversions:

1. fuzzes every operation of ingest's OpenAPI document with schemathesis (pinned, installed into a
   venv under ~/.cache when missing): once without credentials, once with the admin token and an app
   key, so generated requests get past the auth checks to the body checks;
2. abuses the HTTP layer with raw sockets where it takes scale or time: 16 MiB bodies, slow and
   never-finished requests and hundreds of idle connections held under load, replayed impressions,
   postback URLs behind names only DNS makes private, and values at the edges of Int64 through every
   stage. Deterministic single requests (header floods, malformed HTTP, each route's body limit,
   every credential on every route, literal private addresses, the forged impressions) belong to the
   Swift corpus (Tests/PipelineTests/HostileInputTests*.swift, run by `swift test` in CI;
   CONTRIBUTING.md, "Hostile input"), which this run does not repeat;
3. checks the invariants: no service died and /health answers, no 5xx anywhere, every 4xx is RFC 9457
   problem JSON, every valid event was acknowledged and verified, nothing hostile reached `verified`
   (what ingest accepted from hostile requests was refused by the verifier, with a reason), ingest's
   memory did not blow up.

Writes OUTDIR/report.md and OUTDIR/report.json; exits 1 on any violation. Stdlib, `cryptography`
and schemathesis only.

The modules, by concern: `run` (the command line and the run's order), `state` (what the run aims at
and what it saw so far), `launch` (the pipeline, through the harness), `monitor` (crash supervisor,
ingest's memory), `http_client` (requests, raw sockets), `observations` (every answer and what is
wrong with it), `traffic` (signed impressions, the valid traffic), `streams` (the verifier's verdicts
in Redis), `flood` (the forged-network flood), `fuzz` (schemathesis), the attack families `exhaustion`
(16 MiB bodies, slow, idle), `access` (postback URLs) and `events` (replays, extreme values), then
`invariants` and `report`."""
