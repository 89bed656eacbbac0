import TillCatalogue
import TillCore
import TillJobs
import TillLedger

/// Why the settings room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
public enum SettingsReason: String, RefusalReason {
    case configFileMissing
    case invalidBatchWindow
    case invalidCatchUpInterval
    case invalidCatchUpLookBack
    case invalidConfigFile
    case invalidDatabaseURL
    case invalidDatabaseWait
    case invalidImportRate
    case invalidLogLevel
    case invalidMode
    case invalidPort
    case invalidRetryHours
    case invalidRetrySchedule
    /// A setting that is not of its type (a number, a switch, text), or outside its range (`SettingReader`).
    case invalidSetting
    case invalidShutdownDrain
    case invalidShutdownGrace
    case invalidSnapshotKey
    case invalidTracingEndpoint
    case invalidTracingHeaders
    case invalidTracingSampleRatio
    case operatorTokenRequired
    case snapshotKeyUnreadable
    /// A key of the settings file that is no setting (`SettingsFileKeys`).
    case unknownSetting
    case weakOperatorToken
    case weakServerSecret
}

public typealias SettingsRefusal = Refused<SettingsReason>
