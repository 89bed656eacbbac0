import Synchronization
import TillCatalogue
import TillContract
import TillLedger
import TillStorage

/// Whether this process should be sent traffic (`GET /ready`), apart from the start, when the front door answers
/// for a server not yet open (`ServerFrontDoor`): not while storage fails or does not answer, not while draining.
public final class Readiness: Sendable {
    private let database: TillDatabase
    private let draining = Atomic<Bool>(false)
    /// How long the one-row read may take before storage counts as not answering.
    let probeLimit: Duration

    init(database: TillDatabase, probeLimit: Duration = .seconds(1)) {
        self.database = database
        self.probeLimit = probeLimit
    }

    /// The stop began (SIGTERM): not ready from now on, though every route still serves.
    public func drain() { draining.store(true, ordering: .relaxed) }

    public var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// Ready when not draining, no storage outage is under way (`StorageGate`), and a one-row read answers within
    /// `probeLimit`.
    public func check() async -> Components.Schemas.Readiness {
        if isDraining { return Self.draining }
        let gate = database.gate.status
        if !gate.available {
            return .init(
                status: .storageUnavailable,
                message:
                    "storage is failing (\(gate.reason.map { "\($0)" } ?? "unknown")); requests get 503 until it is back"
            )
        }
        guard await database.answersRead(within: probeLimit) else {
            return .init(
                status: .storageUnavailable,
                message: "the database did not answer a one-row read within \(probeLimit)"
            )
        }
        return .init(status: .ready)
    }

    static let draining = Components.Schemas.Readiness(
        status: .draining,
        message: "the process is stopping (SIGTERM): send no new traffic"
    )
    static let migrating = Components.Schemas.Readiness(
        status: .migrating,
        message: "the database is opening and migrating; ready once it is"
    )
}
