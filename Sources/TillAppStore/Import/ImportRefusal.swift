import TillCore

/// Why the import room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum ImportReason: String, RefusalReason {
    case importEnded
    case importNotFound
    case invalidImportFile
    case invalidName
    case invalidOutcome
    case noAPIKey
}

package typealias ImportRefusal = Refused<ImportReason>
