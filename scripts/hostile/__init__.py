"""Hostile input against the real pipeline. scripts/hostile.sh runs it from scripts/ with the bin dir:

    python3 -m hostile BIN OUTDIR [--examples N] [--fuzz-seconds S] [--idle N] [--hold S] [--rate R] [--seed N] [--skip-fuzz]

It copies the binaries it runs into OUTDIR/bin (someone may rebuild BIN meanwhile), starts a private
redis-server, the services and the reference receiver with scripts/harness.py's launcher, and then,
while a background thread keeps sending properly signed impressions and conversions:

1. fuzzes every operation of ingest's OpenAPI document with schemathesis (pinned, installed into a
   venv under ~/.cache when missing): once without credentials, once with the admin token and an app
   key, so generated requests get past the auth checks to the body checks;
2. abuses the HTTP layer with raw sockets: oversized, slow and never-finished bodies, header floods,
   malformed HTTP, hundreds of idle connections, replayed impressions, admin calls without or with a
   wrong token, postback URLs aimed at private, loopback, link-local and metadata addresses;
   a request the Swift corpus (Tests/PipelineTests/HostileInputTests.swift, run by `swift test` in
   CI) already sends with the same expectation is not sent again here: deterministic single requests
   are its to own (CONTRIBUTING.md, "Hostile input"). This run owns what needs scale, time or a
   generator: the fuzzing, the flood, the idle and slow connections held under load, ingest's memory,
   the valid traffic and the invariants over the whole run. The deterministic cases still here are
   ones the corpus does not have yet;
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
(oversized, slow, idle), `protocol` (header floods, malformed HTTP), `access` (admin auth, postback
URLs) and `events` (replays, forged impressions, extreme values), then `invariants` and `report`."""
