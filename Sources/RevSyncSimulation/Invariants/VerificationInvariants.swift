extension InvariantChecker {
    /// Proof of convergence: every sync that finished proved the device's records equal to
    /// the server's (after repairing what differed), and every corruption of a device's store
    /// behind RevSync's back was found by the device's next finished sync; once the network is
    /// good again, every sync is proven.
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
        // By design, not by a share of the syncs a loaded machine lets finish: once the network
        // is good, every sync ends proven, and every device makes one.
        var settled = InvariantCheck(promise: "every device's syncs on the good network at the end were proven equal to the server")
        for device in devices {
            let ledger = device.verification
            if ledger.settlingSyncs == 0 { settled.check(false, "\(device.name) made no sync on the good network") }
            for _ in 0..<(ledger.settlingSyncs - ledger.settlingProven.count) { settled.check(true, "") }
            for violation in ledger.settlingProven { settled.check(false, violation) }
        }
        return [proven, found, settled]
    }
}
