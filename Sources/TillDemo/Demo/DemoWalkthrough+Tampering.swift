import Foundation
import TillClient
import TillContract
import TillFormats

/// The entitlement store on disk, edited by hand.
extension DemoWalkthrough {
    func tamperedStore() async {
        await report.step(
            "A tampered entitlement store is rejected",
            """
            Someone edits the snapshot the app keeps on disk: a million gems, and pro back. The file is the \
            server's signed JWS; at the next launch the app checks the signature, rejects the file and fetches \
            the server's snapshot again.
            """
        ) {
            let file = phone.entitlements.fileURL
            let jws = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, var payload = try Self.decodeSegment(parts[1]) else {
                report.fail("the stored snapshot is a JWS — it is not")
                return
            }
            payload["balances"] = ["gems": 1_000_000]
            var entitlements = payload["entitlements"] as? [[String: Any]] ?? []
            entitlements.append(["id": "pro", "productId": "pro", "provisional": false])
            payload["entitlements"] = entitlements
            let edited = parts[0] + "." + (try Self.encodeSegment(payload)) + "." + parts[2]
            try Data(edited.utf8).write(to: file)
            report.note("edited \(file.lastPathComponent): gems → 1,000,000, pro granted")

            let app = try relaunchPhone()
            let launch = await app.start()
            guard case .rejected(let reason) = launch.storedSnapshot else {
                report.fail("the edited file is rejected at launch — it was \(launch.storedSnapshot)")
                return
            }
            report.pass("at launch the edited file failed verification (\(reason)) and was deleted")
            let account = try await world.client.customer(DemoWorld.customer)
            let gems = await app.balance(of: "gems")
            let pro = await app.isEntitled(to: "pro")
            report.expect(
                gems == account.balances["gems"] && gems < 1_000_000 && !pro,
                "a fresh snapshot came from the server: \(gems) gems, no pro",
                otherwise: "the app believes \(gems) gems, pro: \(pro)"
            )
        }
    }

    static func decodeSegment(_ segment: String) throws -> [String: Any]? {
        guard let bytes = Base64.decode(segment, alphabet: .url) else { return nil }
        return try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }

    static func encodeSegment(_ object: [String: Any]) throws -> String {
        Base64.encode(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), alphabet: .url)
    }
}
