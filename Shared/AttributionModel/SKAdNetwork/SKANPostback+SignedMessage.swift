extension SKANPostback {
    /// The string Apple signed: the version's signed fields, in its order, joined by U+2063. Throws the
    /// first problem `validate()` finds, so a message is only built from a postback of a known version
    /// with every required field.
    public func signedMessage() throws(SKANFieldProblem) -> String {
        let version = try validate()
        return SKANSignedMessage.join(version.signedComponents.compactMap { signedText(of: $0.field) })
    }

    /// Checks the postback against its version before any signature is: every required signed field is
    /// there, no field the version does not sign is (it would look verified without being so), and
    /// the values are within their documented ranges. Returns the version.
    @discardableResult
    public func validate() throws(SKANFieldProblem) -> SKANPostbackVersion {
        guard let resolved = resolvedVersion else {
            let known = SKANPostbackVersion.allCases.map(\.rawValue).joined(separator: ", ")
            throw SKANFieldProblem(key: "version", "must be one of \(known), not \(version ?? "")")
        }
        let components = resolved.signedComponents
        for component in components where !component.isOptional && signedText(of: component.field) == nil {
            throw SKANFieldProblem(key: component.field.rawValue, "is missing (a version \(resolved.rawValue) postback signs it)")
        }
        let signed = Set(components.map(\.field))
        // `version` itself selects the table; a 1.0 postback may spell it out even though 1.0 does not sign it.
        for field in SKANPostbackField.signable where field != .version && !signed.contains(field) {
            if signedText(of: field) != nil {
                throw SKANFieldProblem(key: field.rawValue, "is not part of a version \(resolved.rawValue) postback")
            }
        }
        try checkRanges()
        return resolved
    }

    private func checkRanges() throws(SKANFieldProblem) {
        if sourceAppIdentifier != nil, sourceDomain != nil {
            throw SKANFieldProblem(key: "source-domain", "and source-app-id are exclusive (web ads or app ads)")
        }
        if let sourceIdentifier, !Self.isSourceIdentifierText(sourceIdentifier) {
            throw SKANFieldProblem(key: "source-identifier", "must be 2–4 digits, not \"\(sourceIdentifier)\"")
        }
        if let sourceDomain, sourceDomain.isEmpty || sourceDomain.contains(SKANSignedMessage.separator) {
            throw SKANFieldProblem(key: "source-domain", "must be a domain name")
        }
        if let fidelityType, fidelityType != 0, fidelityType != 1 {
            throw SKANFieldProblem(key: "fidelity-type", "must be 1 (StoreKit-rendered) or 0 (view-through), not \(fidelityType)")
        }
        if let postbackSequenceIndex, !(0...2).contains(postbackSequenceIndex) {
            throw SKANFieldProblem(key: "postback-sequence-index", "must be 0, 1 or 2, not \(postbackSequenceIndex)")
        }
        if let conversionValue, !(0...63).contains(conversionValue) {
            throw SKANFieldProblem(key: "conversion-value", "must be within 0–63, not \(conversionValue)")
        }
        if conversionValue != nil, coarseConversionValue != nil {
            throw SKANFieldProblem(key: "coarse-conversion-value", "and conversion-value are exclusive")
        }
        if let countryCode, countryCode.utf8.count != 2 || !countryCode.utf8.allSatisfy(Self.isASCIILetter) {
            throw SKANFieldProblem(key: "country-code", "must be a two-letter country code, not \"\(countryCode)\"")
        }
        // A separator inside a signed text field would let two different postbacks share one message.
        for field in [SKANPostbackField.adNetworkIdentifier, .transactionIdentifier] {
            if let text = signedText(of: field), text.isEmpty || text.contains(SKANSignedMessage.separator) {
                throw SKANFieldProblem(key: field.rawValue, "must be non-empty text without U+2063")
            }
        }
    }

    private static func isSourceIdentifierText(_ text: String) -> Bool {
        (2...4).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) }
}
