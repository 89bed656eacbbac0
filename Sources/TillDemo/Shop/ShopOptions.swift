import ArgumentParser

/// Where `till shop` finds the server and the store, and who is shopping. The defaults are what
/// `swift run till serve` prints in development mode, except the app key, which each database makes anew.
struct ShopOptions: ParsableArguments {
    @Option(help: "The verification server (till serve).")
    var server = "http://127.0.0.1:8080"

    @Option(help: "The app's key, as till serve prints it (\"app key tk_…\"); default: $TILL_APP_KEY.")
    var appKey: String?

    @Option(help: "The App Store simulator (in till serve's development mode, or till simulator).")
    var simulator = "http://127.0.0.1:8090"

    @Option(help: "The simulator's admin token, if it was started with one.")
    var simulatorToken: String?

    @Option(help: "The simulator device the app runs on; default: the first device of the first sandbox tester.")
    var device: String?

    @Option(help: "The customer id the app signs in with.")
    var customer = "alice"

    @Option(help: "The app's bundle id.")
    var bundleId = "com.example.till"

    @Option(help: "Where the app keeps its outbox, signed snapshot and files, in a folder per device.")
    var data = ".till-shop"
}
