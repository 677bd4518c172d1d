#!/usr/bin/env python3
"""Mutation check: every attribution rule's scenarios must fail when the rule is removed.

For each entry of MUTATIONS below (a rule id from docs/concepts/attribution-rules.md, one or more text edits
that remove or break the rule, and the scenario files that must then fail), on a private clone of
this repository at its HEAD:

    apply the edits -> swift build (test product only) -> swift test --skip-build --filter ScenarioRuleTests
    -> collect the scenario files whose `scenario(_:)` case recorded an issue -> restore the files

and report per entry:

    PASS        every expected scenario failed
    WEAK        it built, but an expected scenario still passed (the scenario does not pin the rule)
    STALE       an edit's old text is not in its file exactly once (the code moved), or a file,
                scenario or rule id no longer exists
    BUILD-FAIL  the mutated code does not compile (fix the edit)
    CRASH       the test process died or timed out (no per-scenario result)
    SKIP        the rule is not a pure rule; the note says what checks it instead
    MISSING     a rule id in docs/concepts/attribution-rules.md has no entry here

The caller's tree is never touched: the clone lives in --workdir (default
$TMPDIR/attribution-mutation) and is reset to the caller's HEAD on every run, keeping its .build so
rebuilds are incremental. Exit status 0 only when every entry is PASS or SKIP.

    python3 scripts/mutation-check.py                 # whole table
    python3 scripts/mutation-check.py --only tier-0   # one rule (repeatable)
    python3 scripts/mutation-check.py --list          # the table, no build
    python3 scripts/mutation-check.py --check         # the table against the code, no build (the test command)
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RULES = "Shared/AttributionModel/Rules/"
WINNER = RULES + "WinnerSelection.swift"
STATE = RULES + "DeviceAttributionState.swift"
ELIGIBILITY = RULES + "ConversionEligibility.swift"
WINDOWS = RULES + "ConversionWindows.swift"
PLAN = RULES + "PostbackPlan.swift"
GATING = RULES + "PostbackFieldGating.swift"
DELAY = RULES + "PostbackDelay.swift"
UPDATE = "Shared/AttributionModel/Events/PostbackUpdate.swift"
WINNER_STEP = "Shared/AttributionModel/Steps/WinnerStep.swift"
STATE_LIMITS = RULES + "DeviceStateLimits.swift"
OPEN_URL = "Shared/AttributionModel/API/ReengagementOpenURL.swift"


def M(rule, what, expect, *edits):
    """One mutation: `edits` are (file, old, new); `expect` the scenario files that must fail, or for a
    rule no scenario can reach, test functions (a name without `.json`, run with `swift test --filter`)."""
    return {"rule": rule, "what": what, "expect": expect, "edits": edits}


def SKIP(rule, note):
    return {"rule": rule, "skip": note}


# Old texts are matched with any run of whitespace standing for any other (so re-wrapping by
# swift-format does not make an entry stale) and must occur exactly once in their file. Keep them
# small and distinctive. Two entries with the same edits share one build and test run.
MUTATIONS = [
    # Winner selection (WinnerSelection, DeviceAttributionState)
    M(
        "click-beats-view",
        "drop the click-over-view comparison",
        ["winner-click-beats-view.json"],
        (WINNER, "if a.interaction.type != b.interaction.type { return a.interaction.type == .click }", ""),
    ),
    M(
        "most-recent-wins",
        "drop the recency comparison (ties fall to the impression id)",
        ["winner-most-recent-click.json", "winner-most-recent-view.json"],
        (WINNER, "if a.interaction.time != b.interaction.time { return a.interaction.time > b.interaction.time }", ""),
    ),
    M(
        "most-recent-wins",
        "the oldest interaction wins",
        ["winner-most-recent-click.json", "winner-most-recent-view.json"],
        (WINNER, "return a.interaction.time > b.interaction.time", "return a.interaction.time < b.interaction.time"),
    ),
    M(
        "production-beats-development",
        "drop the production-over-development comparison",
        ["winner-production-beats-development.json"],
        (WINNER, "if a.payload.isDevelopment != b.payload.isDevelopment { return !a.payload.isDevelopment }", ""),
    ),
    # Returning false leaves equal-time impressions in pool order; the scenario lists the loser first.
    M(
        "tie-impression-id",
        "drop the impression-id tie-break",
        ["winner-tie-impression-id.json"],
        (WINNER, "return a.payload.impressionIdentifier < b.payload.impressionIdentifier", "return false"),
    ),
    M(
        "six-considered",
        "consider every eligible impression, not the 6 most recent",
        ["winner-six-considered.json"],
        (WINNER, ".prefix(consideredImpressions)", ""),
    ),
    M(
        "fifteen-views-kept",
        "drop the 15-views cap",
        ["winner-fifteen-views-per-publisher.json"],
        (STATE, "if views.count > Self.viewsKeptPerPublisher {", "if false {"),
    ),
    M(
        "fifteen-views-kept",
        "the cap counts every publisher's views",
        ["winner-fifteen-views-other-publisher.json"],
        (
            STATE,
            "$0.element.interaction.type == .view && $0.element.payload.publisherItemIdentifier == publisher",
            "$0.element.interaction.type == .view",
        ),
    ),
    M(
        "fifteen-views-kept",
        "the cap drops the newest views",
        ["winner-fifteen-views-per-publisher.json"],
        (
            STATE,
            ".sorted { $0.element.interaction.time < $1.element.interaction.time }",
            ".sorted { $0.element.interaction.time > $1.element.interaction.time }",
        ),
    ),
    # The 5-cap cannot bind while at most 6 impressions are considered (1 winner + 5 others): it is
    # implied by six-considered. Break the one-per-network part instead.
    M(
        "nonwinners-one-per-network",
        "every other-network impression is a non-winner (not one per network)",
        ["winner-non-winners-distinct-networks.json"],
        (
            WINNER,
            "if seen.insert(impression.payload.adNetworkIdentifier).inserted {",
            "if impression.payload.adNetworkIdentifier != winner.payload.adNetworkIdentifier {",
        ),
    ),
    M(
        "nonwinners-one-per-network",
        "non-winners in recency order, not ranking order",
        ["winner-non-winners-distinct-networks.json"],
        (
            WINNER,
            "for impression in ranked.dropFirst() where",
            "for impression in considered.filter({ $0 != winner }) where",
        ),
    ),
    M(
        "winner-network-no-nonwinner",
        "the winner's network may get a non-winner",
        ["winner-network-no-non-winner.json"],
        (
            WINNER,
            "var seen: Set<AdNetworkIdentifier> = [winner.payload.adNetworkIdentifier]",
            "var seen: Set<AdNetworkIdentifier> = []",
        ),
    ),
    M(
        "one-pool-skan",
        "SKAdNetwork impressions left out of the pool",
        ["winner-skan-click-beats-aak-view.json", "winner-skan-view-most-recent.json"],
        (
            WINNER,
            "guard impression.payload.advertisedItemIdentifier == app.itemIdentifier,",
            "guard impression.kind == .adAttributionKit, impression.payload.advertisedItemIdentifier == app.itemIdentifier,",
        ),
    ),
    M(
        "one-pool-skan",
        "AdAttributionKit impressions rank before SKAdNetwork ones",
        ["winner-skan-click-beats-aak-view.json", "winner-skan-view-most-recent.json"],
        (
            WINNER,
            "if a.payload.isDevelopment != b.payload.isDevelopment { return !a.payload.isDevelopment }",
            "if a.payload.isDevelopment != b.payload.isDevelopment { return !a.payload.isDevelopment }\n"
            "        if a.kind != b.kind { return a.kind == .adAttributionKit }",
        ),
    ),
    M(
        "winner-consumed",
        "the winning impression stays in the pool",
        ["winner-impression-used-once.json"],
        (
            STATE,
            "impressions.removeAll { $0.payload.impressionIdentifier == result.winner.payload.impressionIdentifier }",
            "",
        ),
    ),
    # A one-call view ranks as any view (the rule runner plays its scenarios, which no winner-side edit
    # specific to it can break); what sets it apart is the verifier's, whose table tests are the oracle
    # (ScenarioPipelineTests plays view-one-call-beside-open-view.json through the real verifier).
    M(
        "one-call-view",
        "a view without begin is refused as too short",
        ["ImpressionRulesTests"],
        (
            RULES + "ImpressionRules.swift",
            "if let begin = interaction.begin, interaction.time - begin <",
            "if let begin = interaction.begin ?? Optional(interaction.time), interaction.time - begin <",
        ),
    ),
    M(
        "one-call-view",
        "a one-call view is recorded as a view open at its moment",
        ["oneCallViewsNeitherMeetNorHoldTheOpenViewRule"],
        (
            "Shared/AttributionModel/Steps/VerifierStep.swift",
            "let begin = report.interaction.begin else { return nil }",
            "let begin = report.interaction.begin ?? Optional(report.interaction.time) else { return nil }",
        ),
    ),
    M(
        "one-call-view",
        "ingest refuses a view without begin",
        ["RequestValidationTests"],
        (
            "Shared/AttributionModel/API/IngestRequests+EventValidation.swift",
            "case .view where interaction.begin == nil && skadnetworkImpression != nil:",
            "case .view where interaction.begin == nil:",
        ),
    ),
    # attribution-winner's step holds a conversion for CONVERSION_SETTLE_MS; the rule runner drives the
    # same step, so attributing at once lets the conversion miss the impression reported after it.
    M(
        "conversion-settles",
        "conversions are attributed as they arrive, never settled",
        ["winner-impression-reported-after-conversion.json"],
        (WINNER_STEP, "where input == .verified && settleMilliseconds > 0:", "where input == .verified && false:"),
    ),
    # Scenario files deliver a settled conversion and the reports after it in order, so a report racing
    # ahead of a superseding conversion never happens there: the step's test is the oracle.
    M(
        "conversion-settles",
        "a report waits only for a settling conversion that would take it",
        ["anUpdateWaitsForAConversionSettlingBeforeIt"],
        (
            STATE,
            "if settling.contains(where: { $0.time >= target.time && $0.time <= time }) { return nil }",
            "if settling.contains(where: { takes($0) && $0.time >= target.time }) { return nil }",
        ),
    ),
    # The pool is the step's Scope (device and advertised app); services and the rule runner key states by it.
    M(
        "per-device-pool",
        "the pool forgets the device: one pool per advertised app",
        ["winner-per-device-pool.json"],
        (WINNER_STEP, "self.device = device", 'self.device = ""'),
    ),
    # Attribution windows (WinnerSelection.window)
    M(
        "window-view-default",
        "window end exclusive",
        ["windows-view-default-inside.json"],
        (
            WINNER,
            "time - impression.interaction.time <= policy.milliseconds(window)",
            "time - impression.interaction.time < policy.milliseconds(window)",
        ),
    ),
    M(
        "window-view-default",
        "views get the 30-day click default",
        ["windows-view-default-outside.json"],
        (
            WINNER,
            "?? AttributionWindowsConfiguration.defaultViewDays",
            "?? AttributionWindowsConfiguration.defaultClickDays",
        ),
    ),
    M(
        "window-view-default",
        "windows one day too long",
        ["windows-view-default-outside.json"],
        (WINNER, "return .days(Int64(days))", "return .days(Int64(days) + 1)"),
    ),
    M(
        "window-click-default",
        "window end exclusive",
        ["windows-click-default-inside.json"],
        (
            WINNER,
            "time - impression.interaction.time <= policy.milliseconds(window)",
            "time - impression.interaction.time < policy.milliseconds(window)",
        ),
    ),
    M(
        "window-click-default",
        "windows one day too long",
        ["windows-click-default-outside.json"],
        (WINNER, "return .days(Int64(days))", "return .days(Int64(days) + 1)"),
    ),
    M(
        "window-global",
        "global click days ignored",
        ["windows-global-click-shorter.json"],
        (WINNER, "?? configuration?.global?.click ??", "??"),
    ),
    M(
        "window-global",
        "global view days ignored",
        ["windows-global-view-inside.json"],
        (WINNER, "?? configuration?.global?.view ??", "??"),
    ),
    # Ignoring global keeps a 3-day view outside (the default is 1 day): only a longer window shows it.
    M(
        "window-global",
        "windows one day too long",
        ["windows-global-view-outside.json"],
        (WINNER, "return .days(Int64(days))", "return .days(Int64(days) + 1)"),
    ),
    M(
        "window-precedence",
        "global click days beat the network's",
        ["windows-network-beats-global.json"],
        (
            WINNER,
            "perNetwork?.click ?? configuration?.global?.click",
            "configuration?.global?.click ?? perNetwork?.click",
        ),
    ),
    M(
        "window-precedence",
        "global view days beat the network's",
        ["windows-network-view-beats-global.json"],
        (WINNER, "perNetwork?.view ?? configuration?.global?.view", "configuration?.global?.view ?? perNetwork?.view"),
    ),
    M(
        "ignore-interaction-type",
        "ignoreInteractionType ignored",
        ["windows-ignore-view.json", "windows-ignore-click.json"],
        (WINNER, "if perNetwork?.ignoreInteractionType == type { return nil }", ""),
    ),
    # Conversions (ConversionEligibility, DeviceAttributionState.attribute)
    M(
        "download-vs-redownload",
        "a redownload's postbacks say download",
        ["conversion-redownload.json"],
        (
            STATE,
            "conversionType: report.conversionType, conversionTime: report.time",
            "conversionType: report.conversionType == .redownload ? .download : report.conversionType, "
            "conversionTime: report.time",
        ),
    ),
    M(
        "download-vs-redownload",
        "a redownload is selected like a re-engagement (eligible clicks only)",
        ["conversion-redownload.json"],
        (WINNER, "if conversionType == .reengagement {", "if conversionType != .download {"),
    ),
    M(
        "reengagement-install-implied",
        "a re-engagement needs an install the pipeline saw",
        ["reengagement-install-not-seen.json"],
        (
            ELIGIBILITY,
            ") -> Refusal? {\nif let last = state.conversions.max(by: { $0.time < $1.time }) {",
            ") -> Refusal? {\n        if report.conversionType == .reengagement, state.installedAt == nil { return .noEligibleImpression }\n"
            "        if let last = state.conversions.max(by: { $0.time < $1.time }) {",
        ),
    ),
    M(
        "reengagement-eligible-clicks",
        "re-engagement ignores eligible-for-re-engagement",
        ["reengagement-eligible-clicks-only.json"],
        (WINNER, ", impression.payload.eligibleForReengagement == true else {", " else {"),
    ),
    M(
        "reengagement-eligible-clicks",
        "re-engagement takes eligible views too",
        ["reengagement-eligible-view-only.json"],
        (WINNER, "guard impression.interaction.type == .click, impression", "guard impression"),
    ),
    M(
        "skadnetwork-update",
        "SKAdNetwork's shape is not read",
        ["skadnetworkShapedUpdatesDecode"],
        (
            UPDATE,
            "let skadnetwork: [DecodingKeys] = [.fineValue, .coarseValue, .lockWindow]",
            "let skadnetwork: [DecodingKeys] = []",
        ),
    ),
    M(
        "skadnetwork-update-ignored",
        "a SKAdNetwork update no conversion took is refused",
        ["updates-skadnetwork-shape-no-pending-postback.json"],
        (WINNER_STEP, "if update.skadnetworkShape == true {", "if update.skadnetworkShape == true, false {"),
    ),
    M(
        "skadnetwork-update-ignored",
        "every update no conversion took is ignored",
        ["updates-no-pending-postback-refused.json"],
        (WINNER_STEP, "if update.skadnetworkShape == true {", "if true {"),
    ),
    M(
        "reengagement-install-country",
        "a re-engagement without a country keeps none",
        ["reengagement-country-from-install.json"],
        (
            STATE,
            "countryCode: report.countryCode ?? (report.conversionType == .reengagement ? installCountry : nil),",
            "countryCode: report.countryCode,",
        ),
    ),
    M(
        "reengagement-no-nonwinners",
        "re-engagements get non-winners",
        ["reengagement-no-non-winners.json"],
        (WINNER, "guard conversionType != .reengagement else { return Result(winner: winner, nonWinners: []) }", ""),
    ),
    M(
        "reengagement-app-cap",
        "no app cap",
        ["reengagement-app-cap.json"],
        (ELIGIBILITY, "if forApp.count >= appCap.count { return .appReengagementCap }", ""),
    ),
    M(
        "reengagement-app-cap",
        "a re-engagement exactly 30 days old still counts",
        ["reengagement-app-cap-boundary.json"],
        (ELIGIBILITY, "$0.time > appSince", "$0.time >= appSince"),
    ),
    M(
        "reengagement-device-cap",
        "no device cap",
        ["reengagement-device-cap.json"],
        (ELIGIBILITY, "return .deviceReengagementCap", "return nil"),
    ),
    M(
        "reengagement-open-url",
        "the open URL is the URL as given, without AdAttributionKitReengagementOpen",
        ["reengagement-open-url-capped.json", "reengagement-open-url-not-eligible.json"],
        (OPEN_URL, "items.append(URLQueryItem(name: parameter, value: value))", ""),
    ),
    M(
        "reengagement-open-url",
        "a parameter the URL already had is kept beside the new one",
        ["reengagement-open-url-capped.json"],
        (OPEN_URL, ".filter { $0.name != parameter }", ""),
    ),
    M(
        "reengagement-open-url",
        "a re-engagement that creates no conversion records no outcome",
        ["reengagement-open-url-capped.json", "reengagement-open-url-not-eligible.json"],
        (
            WINNER_STEP,
            "if report.conversionType == .reengagement { effects.outcome = (report.conversionTag ?? envelope.id, .notCreated(refusal)) }",
            "",
        ),
    ),
    M(
        "development-no-caps",
        "development winners are capped too",
        ["reengagement-development-no-caps.json"],
        (ELIGIBILITY, ", !winnerIsDevelopment else", " else"),
    ),
    M(
        "cooldown-install",
        "skip the cooldown check",
        ["cooldown-install.json", "cooldown-install-blocks-reengagement.json"],
        (
            ELIGIBILITY,
            "if let hours, hours > 0, report.time < last.time + policy.milliseconds(.hours(Int64(hours))) "
            "{ return .cooldown }",
            "",
        ),
    ),
    M(
        "cooldown-install",
        "no install cooldown",
        ["cooldown-install.json", "cooldown-install-blocks-reengagement.json"],
        (ELIGIBILITY, ": app.attributionCooldown?.installCooldownHours", ": nil"),
    ),
    M(
        "cooldown-install",
        "cooldown end refused",
        ["cooldown-install-boundary.json"],
        (
            ELIGIBILITY,
            "report.time < last.time + policy.milliseconds(",
            "report.time <= last.time + policy.milliseconds(",
        ),
    ),
    M(
        "cooldown-install",
        "the cooldown follows the new conversion's type, not the last one's",
        ["cooldown-install-blocks-reengagement.json"],
        (ELIGIBILITY, "last.conversionType == .reengagement", "report.conversionType == .reengagement"),
    ),
    # No entry for cooldown-zero.json: dropping `hours > 0` is an equivalent mutant (a conversion
    # after the last one is never before `last.time + 0`), so only a bug like "0 = the maximum" shows.
    M(
        "cooldown-organic-none",
        "the install cooldown counts from an organic install too",
        ["cooldown-organic-install.json"],
        (
            ELIGIBILITY,
            "if let last = state.conversions.max(by: { $0.time < $1.time }) {",
            "if let last = state.conversions.max(by: { $0.time < $1.time }) ?? state.installedAt.flatMap({ "
            '$0 < report.time ? ConversionRecord(conversionIdentifier: "organic", conversionType: .download, time: $0) '
            ": nil }) {",
        ),
    ),
    M(
        "cooldown-reengagement",
        "skip the cooldown check",
        ["cooldown-reengagement.json"],
        (
            ELIGIBILITY,
            "if let hours, hours > 0, report.time < last.time + policy.milliseconds(.hours(Int64(hours))) "
            "{ return .cooldown }",
            "",
        ),
    ),
    M(
        "cooldown-reengagement",
        "no re-engagement cooldown",
        ["cooldown-reengagement.json"],
        (ELIGIBILITY, "? app.attributionCooldown?.reengagementCooldownHours", "? nil"),
    ),
    M(
        "cooldown-reengagement",
        "cooldown end refused",
        ["cooldown-reengagement-boundary.json"],
        (
            ELIGIBILITY,
            "report.time < last.time + policy.milliseconds(",
            "report.time <= last.time + policy.milliseconds(",
        ),
    ),
    # Value updates and conversion windows (DeviceAttributionState.receive, PostbackPlan)
    M(
        "conversion-tag-routes",
        "ignore conversion tags",
        ["reengagement-conversion-tag.json"],
        (STATE, "&& (tag == nil || conversion.conversionTag == tag)", ""),
    ),
    M(
        "update-conversion-types",
        "routing ignores conversionTypes",
        ["updates-conversion-types-install.json", "updates-conversion-types-reengagement.json"],
        (STATE, "applies: update.update.applies(to:)", "applies: { _ in true }"),
    ),
    M(
        "update-conversion-types",
        "absent conversionTypes means installs only",
        ["updates-conversion-types-absent.json"],
        (
            UPDATE,
            "conversionTypes.map { $0.contains(type.updateKind) } ?? true",
            "conversionTypes.map { $0.contains(type.updateKind) } ?? (type != .reengagement)",
        ),
    ),
    M(
        "update-before-conversion",
        "an update with no conversion yet is dropped",
        ["updates-before-conversion-shuffled.json"],
        (STATE, "pendingUpdates.append(update)", ""),
    ),
    M(
        "overlapping-opt-in",
        "the opt-in is ignored (always supersede)",
        ["overlap-opt-in-keeps-windows.json"],
        (STATE, "app.eligibleForOverlappingConversions != true", "true"),
    ),
    M(
        "supersede-without-opt-in",
        "skip superseding",
        [
            "overlap-supersede-without-opt-in.json",
            "overlap-supersede-later-window.json",
            "overlap-redownload-supersedes.json",
        ],
        (STATE, "app.eligibleForOverlappingConversions != true", "false"),
    ),
    M(
        "supersede-without-opt-in",
        "only a re-engagement supersedes",
        ["overlap-redownload-supersedes.json"],
        (
            STATE,
            "Self.supersedes(app: conversion.app)",
            "report.conversionType == .reengagement && Self.supersedes(app: conversion.app)",
        ),
    ),
    M(
        "supersede-without-opt-in",
        "superseding leaves the later windows open",
        ["overlap-supersede-without-opt-in.json", "overlap-supersede-later-window.json"],
        (PLAN, "index >= current", "index == current"),
    ),
    M(
        "windows-need-update",
        "a window with no update still sends",
        ["windows-no-update-no-postbacks.json"],
        (PLAN, "guard !upTo.isEmpty else { return nil }", "guard !upTo.isEmpty else { return .init() }"),
        # Timers are set only for windows with a value, so such a window never closes: set them for every window too.
        (
            PLAN,
            "Set(reported.compactMap { window(at: $0.time, policy: policy) }.filter { !windowsDone[$0] })",
            "Set((0..<ConversionWindows.count).filter { !windowsDone[$0] })",
        ),
    ),
    M(
        "later-window-needs-update",
        "a later window carries the earlier windows' values",
        ["windows-later-need-update.json", "windows-lock-freezes-window.json"],
        (PLAN, "start.map { value.time >= $0 } ?? true", "true"),
        # Timers are set only for windows with a value, so such a window never closes: set them for every window too.
        (
            PLAN,
            "Set(reported.compactMap { window(at: $0.time, policy: policy) }.filter { !windowsDone[$0] })",
            "Set((0..<ConversionWindows.count).filter { !windowsDone[$0] })",
        ),
    ),
    M(
        "three-windows",
        "one window only",
        ["windows-three-windows-end.json"],
        (WINDOWS, "public static let count = 3", "public static let count = 1"),
    ),
    M(
        "three-windows",
        "windows end a day late (days 0-2 read as ending after day 2)",
        ["windows-three-windows-end.json"],
        (WINDOWS, "[Duration.days(2), .days(7), .days(35)]", "[Duration.days(3), .days(8), .days(36)]"),
    ),
    M(
        "lock-freezes-window",
        "no per-window freeze on lock",
        ["windows-lock-freezes-window.json", "lifecycle-lock-each-window-tier-3.json"],
        (
            PLAN,
            "windowsDone[index] = true\nheld = postbacks(for: index, preparedAt: lockedAt",
            "held = postbacks(for: index, preparedAt: lockedAt",
        ),
    ),
    M(
        "lock-freezes-window",
        "a lock freezes every window",
        ["windows-lock-freezes-window.json", "lifecycle-lock-each-window-tier-3.json"],
        (
            PLAN,
            "windowsDone[index] = true\nheld = postbacks(for: index, preparedAt: lockedAt",
            "windowsDone = windowsDone.map { _ in true }\n            held = postbacks(for: index, preparedAt: lockedAt",
        ),
    ),
    # Scenario files deliver each event at its own time, so none can be late: the plan's table test is
    # the oracle (LateUpdateTests proves the same against real processes).
    M(
        "late-update-counts",
        "a done window ignores updates stamped before it closed",
        ["lateUpdatesCountWhileTheirPostbacksAreHeld"],
        (PLAN, "guard let done = closed[index], update.time < done.at else { return [] }", "return []"),
    ),
    # Pruning and the pending limit act on stored state over days: the step's table tests are the oracle.
    M(
        "device-state-bounded",
        "the state is never pruned by age",
        ["everyWritePrunesTheStateByAge"],
        (
            WINNER_STEP,
            "let expired = effects.state.prune(now: now, policy: policy)",
            "let expired = DeviceAttributionState.Expired()",
        ),
    ),
    M(
        "device-state-bounded",
        "pending reports are unbounded",
        ["pendingReportsAreBoundedPerDeviceAndApp"],
        (STATE_LIMITS, "? pendingUpdates.count < DeviceStateLimits.pendingUpdates", "? true"),
    ),
    M(
        "nonwinners-follow-windows",
        "non-winners get every window's postback, not the first window's only",
        ["nonwinners-window-end-outside.json"],
        (
            PLAN,
            "(index == 0 ? attribution.nonWinners.map { ($0, false) } : [])",
            "attribution.nonWinners.map { ($0, false) }",
        ),
        (
            GATING,
            "if sequenceIndex > 0 && (tier == .zero || !didWin) { return nil }",
            "if sequenceIndex > 0 && tier == .zero { return nil }",
        ),
    ),
    M(
        "nonwinners-follow-windows",
        "non-winners carry the window's first value, not the one in force when it closed",
        ["nonwinners-window-end-inside.json"],
        (
            PLAN,
            'guard var order = order(window: index, contender: contender, values: values, identifier: "") else {',
            "guard var order = order(window: index, contender: contender, values: contender == 0 ? values"
            + ' : (self.values(window: index, at: firstUpdateAt ?? time, policy: policy) ?? values), identifier: "") else {',
        ),
    ),
    M(
        "nonwinners-follow-windows",
        "non-winners leave from the window's end even when a lock or a superseding conversion closed it first",
        ["windows-lock-freezes-window.json", "overlap-supersede-without-opt-in.json"],
        (
            PLAN,
            "held.append(HeldPostback(order: order, dueAt: time + delay))",
            "held.append(HeldPostback(order: order, dueAt: (contender == 0 ? time : windowEnds(policy: policy)[index].at) + delay))",
        ),
    ),
    M(
        "first-update-deadline",
        "a re-engagement's first update gets the install's 60 days",
        ["reengagement-first-update-deadline.json"],
        (WINDOWS, "type == .reengagement ? .hours(48) : .days(60)", ".days(60)"),
    ),
    # Postback fields and timing (PostbackFieldGating, CrowdTier, PostbackDelay)
    M(
        "tier-0",
        "tier 0 gets later postbacks",
        ["tier-0-first-postback-only.json", "lifecycle-lock-each-window-tier-0.json"],
        (GATING, "(tier == .zero || !didWin)", "(!didWin)"),
    ),
    M(
        "tier-0",
        "tier 0 treated as tier 1",
        ["tier-0-first-postback-only.json", "lifecycle-lock-each-window-tier-0.json"],
        (GATING, "let tier = crowd.tier", "let tier = max(crowd.tier, .one)"),
    ),
    M(
        "tier-1",
        "tier 1 sends the fine value",
        ["tier-1-coarse.json"],
        (
            GATING,
            "case .one:\nreturn PostbackFields(\nsourceIdentifierDigits: 2, conversionValue: nil",
            "case .one:\n            return PostbackFields(\n                sourceIdentifierDigits: 2, conversionValue: values.fine",
        ),
    ),
    M("tier-2", "tier 2 gets tier 1's fields", ["tier-2-fine.json"], (GATING, "case .one:", "case .one, .two:")),
    M(
        "tier-2",
        "tier 3 gets tier 1's fields",
        ["winner-click-beats-view.json"],
        (GATING, "case .one:", "case .one, .three:"),
    ),
    M(
        "tier-2",
        "later windows send first-window fields",
        ["tier-2-fine.json", "winner-click-beats-view.json"],
        (GATING, "if sequenceIndex > 0 {", "if false {"),
    ),
    M(
        "development-timings",
        "development windows are production windows",
        ["development-timings.json", "development-lock.json"],
        (WINDOWS, "if development { return .minutes(Int64(3 * (index + 1))) }", ""),
    ),
    # The runner checks each delay against PostbackDelay.range itself, so break the draw, not the range.
    M(
        "development-timings",
        "development delays drawn from production ranges",
        ["development-timings.json"],
        (
            DELAY,
            "let range = range(sequenceIndex: sequenceIndex, development: development)",
            "let range = range(sequenceIndex: sequenceIndex, development: false)",
        ),
    ),
    M(
        "marketplace",
        "postbacks always name the App Store",
        ["marketplace-alternative.json"],
        (
            PLAN,
            "(attribution.marketplaceIdentifier ?? PostbackPayload.appStoreMarketplace)",
            "PostbackPayload.appStoreMarketplace",
        ),
    ),
    M(
        "crowd-country",
        "the country's crowd no longer caps the tier",
        ["crowd-country-caps-tier.json"],
        (RULES + "CrowdTier.swift", "countryTier ?? .three)", ".three)"),
    ),
    M(
        "development-delay-fixed",
        "development delays random over 5–10 minutes again",
        ["development-delay-fixed.json"],
        (
            DELAY,
            "if development { return developmentDelay...developmentDelay }",
            "if development { return developmentDelay...(developmentDelay * 2) }",
        ),
    ),
    M(
        "development-timings",
        "development winners keep the crowd's tier",
        ["development-timings.json"],
        (PLAN, "attribution.isDevelopment ? .development : crowd", "crowd"),
    ),
    M(
        "test-postbacks-tier",
        "a test postback from publisher 0 gets developer mode's tier, not the one asked for",
        ["testPostbacksMade"],
        (
            "Shared/AttributionModel/Postbacks/TestPostbacks.swift",
            "        plan.crowd = crowd  // a development winner would otherwise get the highest tier\n",
            "",
        ),
    ),
    M(
        "test-postbacks-tier",
        "test postbacks signed with the development key, not the test key",
        ["testPostbacksMade"],
        ("Shared/AttributionModel/Postbacks/TestPostbacks.swift", "            order.isTestPostback = true\n", ""),
    ),
]

ISSUE = re.compile(r'recorded an issue with \d+ arguments? \w+ → "([^"]+\.json)"')
DETAIL = re.compile(r"^↳ (\S+\.json) \[[^\]]*\]: (.*)$")
SCENARIO_SUMMARY = re.compile(r"Test scenario\(_:\) with (\d+) test cases? (?:passed|failed)(?:.* with (\d+) issues?)?")
RUN_END = re.compile(r"Test run with \d+ tests?.* (passed|failed)")
DOC_RULE = re.compile(r"^- `([a-z0-9-]+)`:", re.M)


def anchor(old):
    """A regex for `old` where any whitespace run matches any whitespace run."""
    return re.compile(r"\s+".join(re.escape(part) for part in old.split()))


def sh(args, cwd, log, timeout):
    """Runs a command with its output in the file `log`. Returns (exit code or None on timeout, output)."""
    with open(log, "wb") as out:
        try:
            code = subprocess.run(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = None
    return code, Path(log).read_text(errors="replace")


def prepare(source, workdir):
    """Clones or refreshes the private copy at the caller's HEAD; keeps .build between runs."""
    repo = workdir / "repo"
    if repo.resolve() == source.resolve():
        sys.exit("mutation-check: --workdir must not be the repository itself")
    workdir.mkdir(parents=True, exist_ok=True)
    if not (repo / ".git").exists():
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(source), str(repo)], check=True)
    subprocess.run(["git", "fetch", "--quiet", str(source), "HEAD"], cwd=repo, check=True)
    # reset + clean (not -x): leftovers of an interrupted run go, the ignored .build stays.
    subprocess.run(["git", "reset", "--quiet", "--hard", "FETCH_HEAD"], cwd=repo, check=True)
    subprocess.run(["git", "clean", "-fdq"], cwd=repo, check=True)
    # Package.resolved is ignored by git: reuse the caller's pins so the clone resolves the same
    # versions from SwiftPM's cache (read only; nothing is written to the caller's tree).
    if (source / "Package.resolved").exists():
        shutil.copyfile(source / "Package.resolved", repo / "Package.resolved")
    head = subprocess.run(
        ["git", "log", "-1", "--format=%h %s"], cwd=repo, check=True, stdout=subprocess.PIPE, text=True
    ).stdout.strip()
    return repo, head


def test_product(repo):
    """`swift build --product <name>PackageTests` builds only what the test bundle links (no service
    executables); on Linux every test target shares that one bundle."""
    name = re.search(r'Package\(\s*name:\s*"([^"]+)"', (repo / "Package.swift").read_text())
    return name.group(1) + "PackageTests"


class Stale(Exception):
    """An entry that no longer fits the code: a file or scenario gone, an old text not found once."""


def mutated_texts(repo, entry):
    """The entry's edits applied in order: file -> its mutated text. Raises Stale when an expected
    scenario or an edited file is gone, or an old text is not in its file exactly once."""
    scenarios = repo / "Scenarios"
    missing = [name for name in entry["expect"] if name.endswith(".json") and not (scenarios / name).exists()]
    if missing:
        raise Stale("scenario gone: " + ", ".join(missing))
    mutated = {}
    for file, old, new in entry["edits"]:
        path = repo / file
        if not path.exists():
            raise Stale(f"{file} is gone")
        text = mutated.get(file, path.read_text())
        hits = list(anchor(old).finditer(text))
        if len(hits) != 1:
            where = "not found" if not hits else f"found {len(hits)} times"
            raise Stale(f"old text {where} in {Path(file).name}: {old.splitlines()[0][:60]}")
        mutated[file] = text[: hits[0].start()] + new + text[hits[0].end() :]
    return mutated


def check_table(repo, entries=MUTATIONS):
    """Without building: the problems that would make entries STALE or MISSING (rule ids against
    docs/concepts/attribution-rules.md, scenario files, edited files and their old texts)."""
    doc_rules = set(DOC_RULE.findall((repo / "docs/concepts/attribution-rules.md").read_text()))
    problems = [
        f"{e['rule']}: rule id not in docs/concepts/attribution-rules.md" for e in entries if e["rule"] not in doc_rules
    ]
    problems += [
        f"{rule}: no entry in scripts/mutation-check.py" for rule in sorted(doc_rules - {e["rule"] for e in entries})
    ]
    for entry in entries:
        if "skip" not in entry:
            try:
                mutated_texts(repo, entry)
            except Stale as stale:
                problems.append(f"{entry['rule']}: {stale}")
    return problems


class Runner:
    def __init__(self, repo, logs, timeout):
        self.repo, self.logs, self.timeout = repo, logs, timeout
        self.product = test_product(repo)
        self.cache = {}  # edits -> result, so identical mutations listed under several rules run once

    def build_and_test(self, label):
        """Returns (status, failed scenarios -> first message, detail)."""
        code, text = sh(
            ["swift", "build", "--product", self.product],
            self.repo,
            self.logs / f"{label}.build.log",
            timeout=self.timeout,
        )
        if code != 0:
            errors = [line for line in text.splitlines() if "error:" in line]
            return "BUILD-FAIL", {}, (errors[0] if errors else f"swift build exited {code}").strip()[-160:]
        # `swift test` now and then drops a run of its console lines (seen on this loaded 2-core machine,
        # with a pipe and with a file alike), which would make a failed scenario look passed. `test`
        # notices (issue lines vs the summary's issue count) and reports CRASH; try again, up to 3 times.
        for attempt in (1, 2, 3):
            result = self.test(label, attempt)
            if result[0] != "CRASH" or "timed out" in result[2]:
                break
        return result

    def test(self, label, attempt):
        code, text = sh(
            ["swift", "test", "--skip-build", "--filter", "ScenarioRuleTests"],
            self.repo,
            self.logs / f"{label}.test{attempt}.log",
            timeout=self.timeout,
        )
        failed, issues = {}, 0
        for line in text.splitlines():
            if m := ISSUE.search(line):
                failed.setdefault(m.group(1), "")
                issues += 1
            elif (m := DETAIL.match(line)) and not failed.get(m.group(1)):
                failed[m.group(1)] = m.group(2)
        end, summary = RUN_END.search(text), SCENARIO_SUMMARY.search(text)
        if not end or not summary:
            return "CRASH", failed, "test process timed out" if code is None else f"test process died (exit {code})"
        # Every issue the summary counts must have been read, and every scenario file must have run.
        cases, counted = int(summary.group(1)), int(summary.group(2) or 0)
        files = len(list((self.repo / "Scenarios").glob("*.json")))
        if issues != counted or cases != files:
            return "CRASH", failed, f"incomplete output: {issues}/{counted} issues, {cases}/{files} scenarios"
        return "RAN", failed, end.group(1)

    def unit_test_fails(self, name, label):
        """Whether the test function `name` fails (or its process dies) on the mutated tree."""
        code, text = sh(
            ["swift", "test", "--skip-build", "--filter", name],
            self.repo,
            self.logs / f"{label}.{name}.log",
            timeout=self.timeout,
        )
        end = RUN_END.search(text)
        return end is None or end.group(1) == "failed" or code != 0

    def mutate(self, index, entry):
        """Applies the entry's edits, builds, tests, restores. Returns (status, detail)."""
        try:
            mutated = mutated_texts(self.repo, entry)
        except Stale as stale:
            return "STALE", str(stale)
        tests = [name for name in entry["expect"] if not name.endswith(".json")]
        originals = {file: (self.repo / file).read_text() for file in mutated}
        key = tuple(entry["edits"])
        if key not in self.cache:
            try:
                for file, text in mutated.items():
                    (self.repo / file).write_text(text)
                label = f"{index:02d}-{entry['rule']}"
                status, failed, detail = self.build_and_test(label)
                if status == "RAN":
                    failed = dict(failed)
                    for test in tests:
                        if self.unit_test_fails(test, label):
                            failed[test] = ""
                self.cache[key] = (status, failed, detail)
            finally:
                for file, text in originals.items():
                    (self.repo / file).write_text(text)
        status, failed, detail = self.cache[key]
        if status != "RAN":
            return status, detail
        survivors = [name for name in entry["expect"] if name not in failed]
        others = len(set(failed) - set(entry["expect"]))
        if survivors:
            return "WEAK", "still passing: " + ", ".join(survivors) + (f" ({others} others failed)" if others else "")
        return "PASS", f"{len(entry['expect'])}/{len(entry['expect'])} expected failed (+{others} others)"


def main():
    repository = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", metavar="RULE", help="run only this rule id (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the mutation table and exit")
    parser.add_argument(
        "--check", action="store_true", help="check the table against the code without building (the test command)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / "attribution-mutation",
        help="private clone and build cache (default: $TMPDIR/attribution-mutation)",
    )
    parser.add_argument("--source", type=Path, default=repository, help="repository to clone (default: this one)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per build or test run")
    args = parser.parse_args()

    doc_rules = DOC_RULE.findall((args.source / "docs/concepts/attribution-rules.md").read_text())
    entries = MUTATIONS
    if args.only:
        unknown = set(args.only) - {e["rule"] for e in MUTATIONS}
        if unknown:
            sys.exit(f"mutation-check: no entry for {', '.join(sorted(unknown))}; rules: {', '.join(doc_rules)}")
        entries = [e for e in MUTATIONS if e["rule"] in args.only]

    if args.check:
        problems = check_table(args.source)
        for problem in problems:
            print(f"mutation-check: {problem}")
        print(f"mutation-check: {len(MUTATIONS)} entries, {len(problems)} stale or missing")
        return 1 if problems else 0

    if args.list:
        for e in entries:
            if "skip" in e:
                print(f"{e['rule']:30} SKIP  {e['skip']}")
            else:
                files = ", ".join(sorted({Path(f).name for f, _, _ in e["edits"]}))
                print(f"{e['rule']:30} {e['what']}  [{files}]  -> {', '.join(e['expect'])}")
        return 0

    started = time.monotonic()
    repo, head = prepare(args.source.resolve(), args.workdir.resolve())
    logs = args.workdir.resolve() / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    print(f"mutation-check: clone {repo} at {head}", flush=True)
    runner = Runner(repo, logs, args.timeout)

    # The unmutated tree must pass, or every result below would mean nothing.
    t = time.monotonic()
    print("baseline: building (the first build in a fresh workdir takes minutes) ...", flush=True)
    status, failed, detail = runner.build_and_test("00-baseline")
    if status != "RAN" or failed or detail != "passed":
        print(f"baseline: {status} {detail} {', '.join(sorted(failed))}; logs in {logs}")
        return 2
    print(f"baseline: every scenario passes ({time.monotonic() - t:.0f}s)", flush=True)

    rows = []
    doc_text = (repo / "docs/concepts/attribution-rules.md").read_text()
    clone_rules = set(DOC_RULE.findall(doc_text))
    for index, e in enumerate(entries, 1):
        t = time.monotonic()
        prefix = f"[{index:2d}/{len(entries)}] {e['rule']}: {e.get('what', 'skipped')}"
        print(prefix + " ...", flush=True)
        if e["rule"] not in clone_rules:
            status, detail = "STALE", "rule id not in docs/concepts/attribution-rules.md"
        elif "skip" in e:
            status, detail = "SKIP", e["skip"]
        else:
            status, detail = runner.mutate(index, e)
        print(f"        {status} {detail} ({time.monotonic() - t:.0f}s)", flush=True)
        rows.append((e["rule"], e.get("what", "-"), status, detail))
    if not args.only:
        for rule in sorted(clone_rules - {e["rule"] for e in MUTATIONS}):
            rows.append((rule, "-", "MISSING", "no entry in scripts/mutation-check.py"))

    table = ["| rule | mutation | result | detail |", "|---|---|---|---|"]
    table += [f"| `{r}` | {w} | {s} | {d.replace('|', '/')} |" for r, w, s, d in rows]
    counts = {s: sum(1 for row in rows if row[2] == s) for s in dict.fromkeys(row[2] for row in rows)}
    elapsed = time.monotonic() - started
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    footer = f"{len(rows)} entries: {summary}. Commit {head.split()[0]}, {elapsed / 60:.1f} min."
    print("\n" + "\n".join(table) + "\n\n" + footer)
    if not args.only:
        # Not a failure, a reminder: scenarios no entry names (they may still fail as collateral).
        expected = {name for e in MUTATIONS for name in e.get("expect", [])}
        untargeted = sorted(p.name for p in (repo / "Scenarios").glob("*.json") if p.name not in expected)
        print("Scenarios no entry expects to fail: " + (", ".join(untargeted) or "none") + ".")
    (args.workdir.resolve() / "last-summary.md").write_text("\n".join(table) + "\n\n" + footer + "\n")
    return 0 if all(s in ("PASS", "SKIP") for _, _, s, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
