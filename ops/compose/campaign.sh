#!/bin/sh
# compose.test.yaml's `campaign`, as the operator on the host's network: a simulated campaign sent to
# ingest's published port, then, once every window and delay has passed, the postbacks the receiver
# verified against what the simulation expects, per window and per ad network. Exits 1 when they differ.
#
# Reads TIME_SCALE (the stack's), INGEST_URL, ADMIN_URL, RECEIVER_URL (what the networks register: the
# receiver as the dispatcher reaches it), CAMPAIGN_DEVICES, CAMPAIGN_SEED and CAMPAIGN_BATCH. Writes
# its report and the events ingest acknowledged (for `attribution ledger`) to /data/campaign.
set -eu

scale=${TIME_SCALE:-1}
if ! awk -v s="$scale" 'BEGIN { exit !(s >= 3600) }'; then
    echo "campaign: TIME_SCALE is $scale: its postbacks would take $(awk -v s="$scale" 'BEGIN { printf "%.0f", 43 * 86400 / s / 3600 }') hours;" \
        "start the stack with compose.test.yaml (TIME_SCALE 86400 by default)" >&2
    exit 2
fi
out=/data/campaign
received=/data/postbacks.jsonl

wait_for() {  # wait_for SECONDS WHAT COMMAND...
    seconds=$1 what=$2
    shift 2
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt "$((seconds * 2))" ]; then
            echo "campaign: $what not within $seconds s" >&2
            exit 1
        fi
        sleep 0.5
    done
}
wait_for 180 "ingest ready at $INGEST_URL" curl -fs -o /dev/null "$INGEST_URL/ready"
# The JWKS lists the dispatcher's keys once it has started.
wait_for 120 "the dispatcher's keys in the JWKS" sh -c "curl -fs '$INGEST_URL/.well-known/jwks.json' | grep -q '\"kid\"'"

# Only the postbacks this campaign caused are counted: the receiver's file may hold earlier ones.
offset=0
[ ! -f "$received" ] || offset=$(wc -l <"$received")
rm -f "$out/acknowledged.jsonl" "$out/simulation.json" "$out/postbacks.jsonl"
echo "campaign: ${CAMPAIGN_DEVICES:-60} devices at time scale $scale through $INGEST_URL"
attribution simulate --ingest-url "$INGEST_URL" --admin-url "$ADMIN_URL" \
    --admin-token-file /run/secrets/admin-token --receiver-url "$RECEIVER_URL" \
    --devices "${CAMPAIGN_DEVICES:-60}" --seed "${CAMPAIGN_SEED:-7}" --batch "${CAMPAIGN_BATCH:-1}" \
    --time-scale "$scale" --retry-seconds 120 \
    --acknowledgements "$out/acknowledged.jsonl" --report "$out/simulation.json"

# The last window ends 35 days after the install and its postback may wait 6 more days; retries can add
# a few. That long in scaled time, then a margin.
wait=$(awk -v s="$scale" 'BEGIN { printf "%d", (35 + 6 + 2) * 86400 / s + 5 }')
echo "campaign: waiting ${wait} s for every window and delay to pass"
sleep "$wait"

tail -n "+$((offset + 1))" "$received" >"$out/postbacks.jsonl"
echo "campaign: postbacks per window, arrived against expected"
attribution summary --file "$out/postbacks.jsonl" --expected "$out/simulation.json"
