import Logging
import TillCatalogue
import TillCore
import TillJobs
import TillLedger
import TillStorage

/// What every room of Apple's side is built on: its settings, the database, the local verifier, the catalogue, the
/// ledger, the job queue, the metrics, the clock and the logger. The server makes it once and hands it to each room
/// (intake, confirmation, notifications, consumption, catch-up, imports), which reads them by name through
/// `AppStoreRoom`, so that a room's own fields are only what is its own.
package struct AppStoreServices: Sendable {
    let configuration: AppStoreSettings
    let database: TillDatabase
    let verifier: LocalVerifier
    let catalogue: Catalogue
    let ledger: Ledger
    let jobs: JobQueue
    let metrics: any AppStoreMetrics
    let clock: ServerClock
    let logger: Logger

    package init(
        configuration: AppStoreSettings,
        database: TillDatabase,
        verifier: LocalVerifier,
        catalogue: Catalogue,
        ledger: Ledger,
        jobs: JobQueue,
        metrics: any AppStoreMetrics,
        clock: ServerClock,
        logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.verifier = verifier
        self.catalogue = catalogue
        self.ledger = ledger
        self.jobs = jobs
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }
}

/// A room of Apple's side: it holds the shared services and reads each by its name.
protocol AppStoreRoom {
    var services: AppStoreServices { get }
}

extension AppStoreRoom {
    var configuration: AppStoreSettings { services.configuration }
    var database: TillDatabase { services.database }
    var verifier: LocalVerifier { services.verifier }
    var catalogue: Catalogue { services.catalogue }
    var ledger: Ledger { services.ledger }
    var jobs: JobQueue { services.jobs }
    var metrics: any AppStoreMetrics { services.metrics }
    var clock: ServerClock { services.clock }
    var logger: Logger { services.logger }
}
