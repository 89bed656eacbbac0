import Crypto
import Foundation
import Synchronization
import TillCore
import TillFormats
import TillLedger
import TillStorage

/// Who is signed in to the console: a session begins when the operator token is given (compared in constant time),
/// lives in a cookie whose SHA-256 alone the database keeps (`srv_console_sessions`, so every server sharing it knows
/// the session and a stolen database opens none), ends after eight idle hours, a day at most, or at sign-out. Each
/// session has the token its forms carry against cross-site requests. Sign-in attempts are limited per address
/// (`SignInLimiter`), and every sign-in, refusal and sign-out is recorded (`ConsoleAudit`).
public struct ConsoleSessions: Sendable {
    let store: ConsoleStore
    let clock: ServerClock
    let operatorToken: String
    let limiter = SignInLimiter()
    /// The record of what is done in the console, sign-ins included.
    package let audit: ConsoleAudit

    package init(database: TillDatabase, clock: ServerClock, operatorToken: String) {
        store = ConsoleStore(database: database)
        self.clock = clock
        self.operatorToken = operatorToken
        audit = ConsoleAudit(store: store, clock: clock)
    }

    static let idle: Int64 = 8 * 3_600_000
    static let longest: Int64 = 24 * 3_600_000

    /// A session the cookie named: its record and the cookie's hash (what the audit names it by).
    package struct Current: Sendable {
        package var session: ConsoleSession
        package var address: String?

        package init(session: ConsoleSession, address: String?) {
            self.session = session
            self.address = address
        }

        /// What the audit shows of the session: the first characters of its hash.
        package var label: String { String(session.tokenHash.prefix(12)) }
    }

    /// Signs in with the operator token; answers the new session's cookie value.
    package func signIn(token given: String, address: String?) async throws -> (cookie: String, session: ConsoleSession)
    {
        let now = clock.milliseconds
        if let wait = limiter.refusal(for: address, now: now) {
            try? await audit.record(
                .signInRefused,
                outcome: "tooManySignIns",
                session: nil,
                address: address
            )
            throw ConsoleRefusal(
                .tooManySignIns(retryAfterSeconds: Int(max(1, wait / 1000))),
                "too many sign-in attempts from this address: try again in \(Readable.duration(milliseconds: wait))"
            )
        }
        guard Self.constantTimeEqual(given, operatorToken) else {
            limiter.failed(address, now: now)
            try? await audit.record(.signInRefused, outcome: "invalidToken", session: nil, address: address)
            throw ConsoleRefusal(.invalidToken, "that is not the operator token")
        }
        limiter.succeeded(address)
        let cookie = Self.randomToken()
        let session = ConsoleSession(
            tokenHash: Self.hash(cookie),
            csrfToken: Self.randomToken(),
            createdAt: now,
            expiresAt: now + Self.idle,
            lastSeenAt: now,
            address: address
        )
        try await store.insert(session, on: store.sql)
        try await audit.record(.signIn, session: String(session.tokenHash.prefix(12)), address: address)
        return (cookie, session)
    }

    /// The live session a cookie names, its idle time restarted (written at most once a minute); nil when there is
    /// none, it ended, or it is older than a day.
    package func session(cookie: String) async throws -> ConsoleSession? {
        guard !cookie.isEmpty, cookie.utf8.count <= 128 else { return nil }
        let now = clock.milliseconds
        let hash = Self.hash(cookie)
        guard var session = try await store.consoleSession(tokenHash: hash, on: store.sql),
            session.expiresAt > now, now - session.createdAt < Self.longest
        else { return nil }
        if now - session.lastSeenAt >= 60_000 {
            session.lastSeenAt = now
            session.expiresAt = min(now + Self.idle, session.createdAt + Self.longest)
            try await store.touchConsoleSession(tokenHash: hash, at: now, expiresAt: session.expiresAt, on: store.sql)
        }
        return session
    }

    /// Ends the session (and sweeps the ones that expired).
    package func signOut(_ current: Current) async throws {
        try await store.deleteConsoleSession(
            tokenHash: current.session.tokenHash,
            now: clock.milliseconds,
            on: store.sql
        )
        try await audit.record(.signOut, session: current.label, address: current.address)
    }

    /// Whether a form's token is the session's, compared in constant time.
    package static func csrfMatches(_ given: String?, _ session: ConsoleSession) -> Bool {
        guard let given else { return false }
        return constantTimeEqual(given, session.csrfToken)
    }

    package static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        guard left.count == right.count, !right.isEmpty else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// 32 random bytes, base64url.
    package static func randomToken() -> String {
        Base64.encode(SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }, alphabet: .url)
    }

    /// The hex SHA-256 of a cookie value.
    static func hash(_ cookie: String) -> String {
        SHA256.hash(data: Data(cookie.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Limits sign-in attempts: five failures from one address within fifteen minutes refuse that address until the
/// window has passed, and a hundred failures from all addresses within fifteen minutes refuse everyone for the rest of
/// it (someone is guessing from many places). A success clears its address. Kept in memory: a restart forgets it, and
/// each server sharing a database counts its own.
final class SignInLimiter: Sendable {
    static let window: Int64 = 15 * 60_000
    static let perAddress = 5
    static let overall = 100

    private struct State {
        var failures: [String: [Int64]] = [:]
        var all: [Int64] = []
    }

    private let state = Mutex(State())

    /// How long `address` must wait before it may try again, or nil when it may now.
    func refusal(for address: String?, now: Int64) -> Int64? {
        state.withLock { state in
            Self.prune(&state, now: now)
            let mine = state.failures[address ?? ""] ?? []
            if mine.count >= Self.perAddress, let oldest = mine.first { return oldest + Self.window - now }
            if state.all.count >= Self.overall, let oldest = state.all.first { return oldest + Self.window - now }
            return nil
        }
    }

    func failed(_ address: String?, now: Int64) {
        state.withLock { state in
            state.failures[address ?? "", default: []].append(now)
            state.all.append(now)
        }
    }

    func succeeded(_ address: String?) {
        state.withLock { _ = $0.failures.removeValue(forKey: address ?? "") }
    }

    private static func prune(_ state: inout State, now: Int64) {
        let cutoff = now - window
        state.all.removeAll { $0 <= cutoff }
        for (address, times) in state.failures {
            let kept = times.filter { $0 > cutoff }
            state.failures[address] = kept.isEmpty ? nil : kept
        }
    }
}

/// Every action taken in the console, with the operator's note and how it ended (`srv_console_actions`), read back as
/// the console's activity page.
public struct ConsoleAudit: Sendable {
    let store: ConsoleStore
    let clock: ServerClock

    package func record(
        _ action: ConsoleAction,
        bundleId: String? = nil,
        target: String? = nil,
        note: String? = nil,
        outcome: String = "done",
        session: String?,
        address: String?
    ) async throws {
        try await store.insert(
            ConsoleActionRecord(
                at: clock.milliseconds,
                action: action,
                bundleId: bundleId,
                target: target,
                note: note,
                outcome: outcome,
                session: session,
                address: address
            ),
            on: store.sql
        )
    }

    /// The actions, newest first, a page at a time.
    package func actions(before: PageKey?, limit: Int) async throws -> [ConsoleActionRecord] {
        try await store.consoleActions(before: before, limit: limit, on: store.sql)
    }
}
