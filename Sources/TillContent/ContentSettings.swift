import TillCatalogue
import TillLedger

/// Limits of content delivery: how large an upload may be and how long a download URL stays valid.
public struct ContentSettings: Sendable, Hashable {
    /// The largest file an operator may upload, in bytes; larger uploads are refused with 413 before they fill
    /// the disk.
    public var maxUploadBytes: Int64
    /// How long a signed download URL works. Short, because anyone holding the URL can use it until then; long
    /// enough for a slow connection to start (a started transfer is not cut off at expiry).
    public var urlLifetime: Duration

    public init(maxUploadBytes: Int64 = 512 * 1024 * 1024, urlLifetime: Duration = .seconds(15 * 60)) {
        self.maxUploadBytes = maxUploadBytes
        self.urlLifetime = urlLifetime
    }
}
