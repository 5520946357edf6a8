extension InvariantChecker {
    /// Proof of convergence: every sync that finished proved the device's records equal to
    /// the server's (after repairing what differed), and every corruption of a device's store
    /// behind RevSync's back was found by the device's next finished sync.
    func verificationChecks() -> [InvariantCheck] {
        var proven = InvariantCheck(promise: "every device that finished a sync was verified equal to the server")
        var found = InvariantCheck(
            promise: "every corruption of a device's store behind RevSync's back was found and repaired by its next sync")
        for device in devices {
            let ledger = device.verification
            for _ in 0..<ledger.verifiedSyncs { proven.check(true, "") }
            for violation in ledger.unverifiedSyncs { proven.check(false, violation) }
            for _ in ledger.found { found.check(true, "") }
            for violation in ledger.missed { found.check(false, violation) }
            for corruption in ledger.pending {
                found.check(false, "\(device.name): \(corruption) was never judged: no sync finished after it")
            }
        }
        return [proven, found]
    }
}
