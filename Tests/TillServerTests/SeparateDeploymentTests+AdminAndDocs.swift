import Foundation
import NIOHTTP1
import Testing
import TillContract
import TillTestSupport

extension SeparateDeploymentTests {
    /// Issue 15, item 8: every admin list pages with a cursor and says how many there are, instead of stopping
    /// at 500 silently; the last page says so with `nextCursor: null`.
    @Test(arguments: TestDatabase.all)
    func everyAdminListPagesWithACursorAndATotal(_ database: TestDatabase) async throws {
        try await SeparateDeployment.run(database: database, notifications: false) { deployment in
            for _ in 0..<5 {
                let jws = try #require(try await deployment.buy("gems.100").signedTransaction)
                let reply = try await deployment.submit("alice", "signedTransaction", jws, wait: 60)
                #expect((reply.object["submission"] as? [String: Any])?["state"] as? String == "confirmed")
            }
            var seen: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let path = "/admin/v1/submissions?state=confirmed&limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await deployment.admin.get(path)
                #expect(page.status == 200, "\(page)")
                #expect(page.object["total"] as? Int == 5)
                #expect(page.object.keys.contains("nextCursor"), "the last page says nextCursor: null too")
                // Page<T> is hand-written (the generator cannot write that null: swift-openapi-generator#934); its
                // bytes are the contract's page, to the field.
                let typed = try page.decode(Components.Schemas.SubmissionPage.self)
                #expect(typed.total == 5 && typed.nextCursor == page.object["nextCursor"] as? String)
                seen += (page.object["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                cursor = page.object["nextCursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3 && seen.count == 5 && Set(seen).count == 5, "\(pages) pages: \(seen)")

            for path in ["/admin/v1/apps", "/admin/v1/apps/\(SeparateDeployment.bundleId)/products?limit=3"] {
                let page = try await deployment.admin.get(path)
                #expect(page.status == 200 && page.object["items"] is [Any] && page.object["total"] is Int, "\(page)")
            }
            let apps = try await deployment.admin.get("/admin/v1/apps").decode(Components.Schemas.AppPage.self)
            #expect(apps.items.map(\.bundleId) == [SeparateDeployment.bundleId])
            let products = try await deployment.admin.get(
                "/admin/v1/apps/\(SeparateDeployment.bundleId)/products?limit=3"
            )
            #expect((products.object["items"] as? [Any])?.count == 3 && products.object["total"] as? Int == 4)
            let typedProducts = try products.decode(Components.Schemas.ProductPage.self)
            #expect(typedProducts.items.count == 3 && typedProducts.nextCursor != nil)
            let badLimit = try await deployment.admin.get("/admin/v1/submissions?limit=0")
            #expect(badLimit.status == 400 && badLimit.code == "invalidLimit", "\(badLimit)")
            let badCursor = try await deployment.admin.get("/admin/v1/submissions?cursor=nonsense")
            #expect(badCursor.status == 400 && badCursor.code == "invalidCursor", "\(badCursor)")
        }
    }
}

extension SeparateDeploymentTests {
    /// Issue 15, item 19: the setup docs/configuration.md gives for a production server beside a separately
    /// started simulator runs as written (bash, curl and python3), from the app in App Store Connect to a
    /// confirmed purchase. Only the two addresses are changed, to where the test started the processes.
    @Test func theDocumentedSetupAgainstASeparateSimulatorRunsAsWritten() async throws {
        try await SeparateDeployment.runUnprepared { simulator, server, directory in
            let script = try DocumentedDeployment.block(after: "<!-- example: separate-simulator-setup -->")
                .replacingOccurrences(of: "http://127.0.0.1:8090", with: simulator)
                .replacingOccurrences(of: "http://127.0.0.1:8080", with: server)
            let (status, text) = try await ChildProcess.run(
                "/bin/bash",
                ["-euo", "pipefail", "-c", script],
                in: directory
            )
            #expect(status == 0, "\(text)")
            // curl prints no newline after a body: the submission's answer is the last JSON object printed.
            let answer =
                text.range(of: "{\"customer\":", options: .backwards).map { String(text[$0.lowerBound...]) } ?? ""
            let object = (try? JSONSerialization.jsonObject(with: Data(answer.utf8))) as? [String: Any]
            #expect((object?["submission"] as? [String: Any])?["state"] as? String == "confirmed", "\(text)")
            let entitlements = (object?["customer"] as? [String: Any])?["entitlements"] as? [[String: Any]]
            #expect(
                entitlements?.first?["id"] as? String == "pro" && entitlements?.first?["provisional"] as? Bool == false
            )
        }
    }
}
