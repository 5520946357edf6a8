import Foundation
import RevSyncProtocol

/// What the server has been told of the store's proofs, so that it learns of a proof when it
/// is made (a sync or a push proved the store at the server's revision), not at the next
/// request: a small report (`POST /verify` with `report`), at most one every
/// ``Synchronizer/Configuration/proofReportInterval``, none when the server knows already.
struct ProofReports {
    /// The newest revision the server was told the store was proven at (a request's
    /// `RevSync-Digest` header, a report).
    var told: Revision = -1
    /// When the last report left.
    var lastSent: ContinuousClock.Instant?
    /// The newest proof not told yet, waiting for the interval to pass.
    var waiting: (revision: Revision, digest: DigestSum)?
    /// Whether a task sends ``waiting`` once the interval passed.
    var scheduled = false
}

extension Synchronizer {
    /// The server heard of the store's proof at `revision` (a request's header carried it).
    func proofTold(at revision: Revision) {
        proofReports.told = max(proofReports.told, revision)
    }

    /// The store was proven equal to the server's records at `revision` (the server's revision
    /// when its answer left): tells the server now, or once the interval since the last report
    /// passed (the newest proof by then); nothing when it knows already.
    func tellProof(at revision: Revision, digest: DigestSum, server: LocalStore.ServerConnection) async {
        guard revision > proofReports.told, let interval = configuration.proofReportInterval else { return }
        if let last = proofReports.lastSent, ContinuousClock.now - last < interval {
            proofReports.waiting = (revision, digest)
            guard !proofReports.scheduled else { return }
            proofReports.scheduled = true
            let (wait, sleep) = (interval - (ContinuousClock.now - last), self.sleep)
            Task { [weak self] in
                try? await sleep(wait)  // a sleep cut short (cancelled) only sends the proof sooner
                await self?.sendWaitingProof(server: server)
            }
            return
        }
        await sendProof(at: revision, digest: digest, server: server)
    }

    private func sendWaitingProof(server: LocalStore.ServerConnection) async {
        proofReports.scheduled = false
        guard let waiting = proofReports.waiting else { return }
        proofReports.waiting = nil
        // Still the store's revision: otherwise a later sync or push proves (and tells) anew. A
        // store that cannot be read (closed, wiped) has nothing to tell.
        guard waiting.revision > proofReports.told, (try? await store.status().maxRevision) == waiting.revision else { return }
        await sendProof(at: waiting.revision, digest: waiting.digest, server: server)
    }

    private func sendProof(at revision: Revision, digest: DigestSum, server: LocalStore.ServerConnection) async {
        proofReports.lastSent = .now
        proofReports.told = max(proofReports.told, revision)
        var outcome = Verifier.Outcome(equal: true)
        // Best effort: a server that moved on meanwhile, or a lost answer, leaves it to the
        // next request's header.
        _ = try? await Verifier(store: store, transport: transport, server: server, gzipLevel: configuration.gzipLevel)
            .report(digest, at: revision, into: &outcome)
    }
}
