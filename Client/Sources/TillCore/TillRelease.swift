/// The release this code is. The server, the simulator, the command line and the app SDK are released together
/// under one number, with semantic versioning (docs/releasing.md): `till --version` prints it, CHANGELOG.md's top
/// heading states it, and an app names it in `.package(url:from:)`. `ReleaseTests` holds the three together.
public enum TillRelease {
    /// `MAJOR.MINOR.PATCH`. Before 1.0.0 a MINOR release may change the API or the schema (CHANGELOG.md says how);
    /// a PATCH release changes neither.
    public static let version = "0.4.0"
}
