import AttributionModel

/// What the simulator sent and what the pipeline should therefore deliver, for comparison with
/// `attribution summary --json` over the receiver's file.
struct SimulationReport: Codable, Sendable {
    struct Impressions: Codable, Sendable {
        var click = 0
        var view = 0
        var total = 0
    }

    struct Installs: Codable, Sendable {
        var download = 0
        var redownload = 0
        var total = 0
        /// Installs for which the model's winner selection found a winner.
        var attributed = 0
    }

    struct Updates: Codable, Sendable {
        var first = 0
        var second = 0
        /// Second updates sent after window 1 had already ended (the run fell behind a large time scale).
        var secondLate = 0
        var total: Int { first + second }

        enum CodingKeys: String, CodingKey {
            case first, second
            case secondLate = "second-late"
        }
    }

    struct AdNetwork: Codable, Sendable {
        var adNetworkIdentifier: String
        var impressions = 0
        /// Winning postbacks per window (index = postback-sequence-index): see `expectedWinning`.
        var expectedWinning = [0, 0, 0]
        /// One window-0 non-winning postback per attributed install where this network lost.
        var expectedNonWinning = 0

        enum CodingKeys: String, CodingKey {
            case adNetworkIdentifier = "ad-network-identifier"
            case impressions
            case expectedWinning = "expected-winning"
            case expectedNonWinning = "expected-non-winning"
        }
    }

    var seed: UInt64
    var timeScale: Double
    var devices: Int
    var impressions = Impressions()
    var installs = Installs()
    var updates = Updates()
    /// Winning postbacks per window (index = postback-sequence-index), assuming every crowd is at least
    /// tier 1: window 0 for each attributed install with an update, and a later window only for each
    /// second update that landed in it (a window without an update sends nothing, spec section 4).
    var expectedWinning = [0, 0, 0]
    var expectedNonWinning = 0
    var adNetworks: [AdNetwork]

    enum CodingKeys: String, CodingKey {
        case seed
        case timeScale = "time-scale"
        case devices, impressions, installs, updates
        case expectedWinning = "expected-winning"
        case expectedNonWinning = "expected-non-winning"
        case adNetworks = "ad-networks"
    }

    init(seed: UInt64, timeScale: Double, networks: [AdNetworkIdentifier], outcomes: [DeviceOutcome]) {
        self.seed = seed
        self.timeScale = timeScale
        devices = outcomes.count
        var byNetwork = Dictionary(uniqueKeysWithValues: networks.map { ($0, AdNetwork(adNetworkIdentifier: $0.rawValue)) })
        for outcome in outcomes {
            for impression in outcome.impressions {
                if impression.interaction.type == .click { impressions.click += 1 } else { impressions.view += 1 }
                impressions.total += 1
                byNetwork[impression.payload.adNetworkIdentifier]?.impressions += 1
            }
            switch outcome.device.install {
            case .download: installs.download += 1
            case .redownload: installs.redownload += 1
            case .reengagement, nil: break
            }
            if outcome.conversionTime != nil { installs.total += 1 }
            updates.first += outcome.updatesSent
            if outcome.secondUpdateSent {
                updates.second += 1
                if outcome.secondUpdateWindow != 1 { updates.secondLate += 1 }
            }
            guard let attribution = outcome.attribution else { continue }
            installs.attributed += 1
            // Windows start only with an update; without one the pipeline sends nothing at all.
            guard outcome.updatesSent > 0 else { continue }
            let winner = attribution.winner.payload.adNetworkIdentifier
            var windows = [0]
            if let window = outcome.secondUpdateWindow, window > 0 { windows.append(window) }
            for window in windows {
                byNetwork[winner]?.expectedWinning[window] += 1
                expectedWinning[window] += 1
            }
            for loser in attribution.nonWinners {
                byNetwork[loser.payload.adNetworkIdentifier]?.expectedNonWinning += 1
                expectedNonWinning += 1
            }
        }
        adNetworks = byNetwork.values.sorted { $0.adNetworkIdentifier < $1.adNetworkIdentifier }
    }

    /// The one stdout line a person or a script greps.
    var summaryLine: String {
        "simulated \(devices) devices (seed \(seed)): \(impressions.total) impressions (\(impressions.click) click, "
            + "\(impressions.view) view), \(installs.total) installs "
            + "(\(installs.redownload) redownload, \(installs.attributed) attributed), "
            + "\(updates.total) updates (\(updates.second) second-window); expected winning postbacks "
            + "\(expectedWinning[0]) in window 0, \(expectedWinning[1]) in window 1, \(expectedWinning[2]) in window 2, "
            + "and \(expectedNonWinning) non-winning"
    }
}

extension SimulationReport {
    /// One line per window comparing `arrived` with what this report expects (non-winners get the
    /// first window only), and whether every count is as expected.
    func compare(with arrived: PostbackTally) -> (lines: [String], matches: Bool) {
        var matches = true
        var lines = (0..<3).map { window in
            let nonWinning = window == 0 ? expectedNonWinning : 0
            let winning = expectedWinning.indices.contains(window) ? expectedWinning[window] : 0
            let ok = arrived.totals.winning[window] == winning && arrived.totals.nonWinning[window] == nonWinning
            matches = matches && ok
            return "window \(window): winning \(arrived.totals.winning[window]) arrived (expected \(winning)), "
                + "non-winning \(arrived.totals.nonWinning[window]) arrived (expected \(nonWinning))" + (ok ? "" : "  MISMATCH")
        }
        // Per ad network too: totals that match can hide one network's win counted as another's.
        let counts = Dictionary(arrived.adNetworks.map { ($0.adNetworkIdentifier, $0.counts) }, uniquingKeysWith: { a, _ in a })
        let networks = Set(adNetworks.map(\.adNetworkIdentifier)).union(counts.keys).sorted()
        let expected = Dictionary(adNetworks.map { ($0.adNetworkIdentifier, $0) }, uniquingKeysWith: { a, _ in a })
        var networksMatch = true
        for network in networks {
            let want = expected[network] ?? AdNetwork(adNetworkIdentifier: network)
            let got = counts[network] ?? PostbackTally.Counts()
            guard got.winning != want.expectedWinning || got.nonWinning != [want.expectedNonWinning, 0, 0] else { continue }
            networksMatch = false
            lines.append(
                "\(network): winning \(got.winning) arrived (expected \(want.expectedWinning)), non-winning "
                    + "\(got.nonWinning[0]) arrived (expected \(want.expectedNonWinning))  MISMATCH")
        }
        if networksMatch { lines.append("per ad network: as expected (\(networks.count) networks)") }
        return (lines, matches && networksMatch)
    }
}
