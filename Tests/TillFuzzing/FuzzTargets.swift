/// Every fuzz target, in the order `Tools/fuzz --list` names them.
public enum FuzzTargets {
    public static let all: [FuzzTarget] = [
        ReceiptTargets.appReceipt,
        ReceiptTargets.receiptPayload,
        TransactionReceiptTarget.target,
        JWSTarget.target,
        HTTPTargets.notification,
        AppleAnswerTargets.verifyReceipt,
        AppleAnswerTargets.serverAPI,
        HTTPTargets.appAPI,
        HTTPTargets.adminAPI,
        HTTPTargets.simulatorStoreKit,
        HTTPTargets.simulatorAdmin,
        InspectTarget.target,
    ]

    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }

    /// Closes the worlds the HTTP targets opened; the next input opens fresh ones (replays use one per input).
    public static func resetWorlds() async {
        await ServerWorld.shared.reset()
        await SimulatorWorld.shared.reset()
    }
}
