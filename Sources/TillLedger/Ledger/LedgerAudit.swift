import TillStorage

/// Whether a database's balances and ledger agree, read without writing (`till check`): each balance is the sum of
/// its entries, and each purchase's credits belong to a transaction of the ledger.
public enum LedgerAudit {
    /// What disagrees, one sentence each; empty when the books hold together.
    public static func disagreements(in database: TillDatabase) async throws -> [String] {
        try await LedgerStore.disagreements(on: database.sql)
    }
}
