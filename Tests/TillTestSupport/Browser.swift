import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A real Chromium, headless, driven through Debian's `chromedriver` with the W3C WebDriver protocol (JSON over HTTP
/// on loopback), and through the DevTools protocol where WebDriver has no command (the accessibility tree), by
/// chromedriver's `goog/cdp/execute`. Hand-written: no WebDriver client is among the mirrored packages, and the few
/// commands the console's tests need are plain HTTP calls.
///
/// `Browser.run` starts chromedriver on a port of its own choosing, opens one session, and ends both when the body
/// returns or throws.
public final class Browser: Sendable {
    /// Debian's `chromium` and `chromium-driver`, as `.ci/run` installs them.
    public static let prerequisite = Prerequisite(
        "Chromium and chromedriver (Debian's chromium and chromium-driver)",
        hint: "apt-get install chromium chromium-driver, as .ci/run does",
        isAvailable: FileManager.default.isExecutableFile(atPath: chromedriverPath)
            && FileManager.default.isExecutableFile(atPath: chromiumPath)
    )

    public static var chromiumPath: String {
        ProcessInfo.processInfo.environment["TILL_TEST_CHROMIUM"] ?? "/usr/bin/chromium"
    }
    public static var chromedriverPath: String {
        ProcessInfo.processInfo.environment["TILL_TEST_CHROMEDRIVER"] ?? "/usr/bin/chromedriver"
    }

    /// A page element, by WebDriver's reference.
    public struct Element: Sendable {
        public let id: String
        var json: [String: Any] { [Browser.elementKey: id] }
    }

    /// WebDriver answered an error.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    let client: HTTPClient
    let base: String

    private init(client: HTTPClient, base: String) {
        self.client = client
        self.base = base
    }

    /// Starts chromedriver and a headless Chromium of `width` × `height` CSS pixels; runs `body`; stops both.
    public static func run<T>(width: Int = 1280, height: Int = 900, _ body: (Browser) async throws -> T) async throws
        -> T
    {
        try prerequisite.require()
        let driver = Process()
        driver.executableURL = URL(fileURLWithPath: chromedriverPath)
        driver.arguments = ["--port=0"]
        let output = Pipe()
        driver.standardOutput = output
        driver.standardError = FileHandle.nullDevice
        try ChildProcess.launch(driver)
        defer {
            // SIGKILL: a child of Foundation's Process on Linux starts with the signals of the launching thread
            // blocked, SIGTERM among them.
            kill(driver.processIdentifier, SIGKILL)
            driver.waitUntilExit()
        }
        let port = try await Self.port(announcedOn: output.fileHandleForReading)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let driverBase = "http://127.0.0.1:\(port)"
        do {
            let created = try await Self.call(
                client,
                .POST,
                driverBase + "/session",
                [
                    "capabilities": [
                        "alwaysMatch": [
                            "browserName": "chrome",
                            "goog:chromeOptions": [
                                "binary": chromiumPath,
                                "args": [
                                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                    "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1",
                                    "--window-size=\(width),\(height)", "--lang=en-US",
                                ],
                            ],
                        ]
                    ]
                ]
            )
            guard let session = (created as? [String: Any])?["sessionId"] as? String else {
                throw Failure(description: "chromedriver opened no session: \(String(describing: created))")
            }
            let browser = Browser(client: client, base: driverBase + "/session/" + session)
            do {
                let result = try await body(browser)
                _ = try? await Self.call(client, .DELETE, browser.base, nil)
                try await client.shutdown()
                return result
            } catch {
                _ = try? await Self.call(client, .DELETE, browser.base, nil)
                throw error
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// The port in chromedriver's "ChromeDriver was started successfully on port N." line.
    static func port(announcedOn handle: FileHandle) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var seen = ""
                var answered = false
                ChildProcess.readChunks(handle) { data in
                    guard !answered else { return }
                    seen += String(decoding: data, as: UTF8.self)
                    if let range = seen.range(of: "started successfully on port "),
                        let end = seen[range.upperBound...].firstIndex(where: { !$0.isNumber }),
                        let port = Int(seen[range.upperBound..<end])
                    {
                        answered = true
                        continuation.resume(returning: port)
                    }
                }
                if !answered {
                    continuation.resume(throwing: Failure(description: "chromedriver did not start: \(seen)"))
                }
            }
        }
    }

    static func call(_ client: HTTPClient, _ method: HTTPMethod, _ url: String, _ body: Any?) async throws -> Any? {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: Array(try JSONSerialization.data(withJSONObject: body))))
        }
        let response = try await client.execute(request, timeout: .seconds(120))
        let data = Data((try await response.body.collect(upTo: 64 << 20)).readableBytesView)
        let json = data.isEmpty ? nil : try JSONSerialization.jsonObject(with: data)
        let value = (json as? [String: Any])?["value"]
        guard response.status == .ok else {
            let error = value as? [String: Any]
            throw Failure(
                description: "WebDriver \(method) \(url): \(response.status.code) \(error?["error"] ?? "") "
                    + "\(error?["message"] ?? "")"
            )
        }
        return value
    }

    @discardableResult
    func command(_ method: HTTPMethod, _ path: String, _ body: Any? = nil) async throws -> Any? {
        try await Self.call(client, method, base + path, body ?? (method == .POST ? [String: Any]() : nil))
    }

    // MARK: Navigation

    public func go(_ url: String) async throws { try await command(.POST, "/url", ["url": url]) }

    public func currentURL() async throws -> String { try await command(.GET, "/url") as? String ?? "" }

    public func title() async throws -> String { try await command(.GET, "/title") as? String ?? "" }

    /// The page's path and query (the part after the host).
    public func currentPath() async throws -> String {
        let url = try await currentURL()
        guard let components = URLComponents(string: url) else { return url }
        return components.path + (components.query.map { "?" + $0 } ?? "")
    }

    public func setWindow(width: Int, height: Int) async throws {
        try await command(.POST, "/window/rect", ["width": width, "height": height])
    }

    // MARK: Elements

    /// The first element matching the CSS selector; throws when there is none.
    public func find(_ selector: String) async throws -> Element {
        let found = try await command(.POST, "/element", ["using": "css selector", "value": selector])
        guard let id = (found as? [String: Any])?[Self.elementKey] as? String else {
            throw Failure(description: "no element \(selector)")
        }
        return Element(id: id)
    }

    public func findAll(_ selector: String) async throws -> [Element] {
        let found = try await command(.POST, "/elements", ["using": "css selector", "value": selector])
        return (found as? [[String: Any]] ?? []).compactMap { ($0[Self.elementKey] as? String).map(Element.init) }
    }

    public func type(_ text: String, into element: Element) async throws {
        try await command(.POST, "/element/\(element.id)/clear")
        try await command(.POST, "/element/\(element.id)/value", ["text": text])
    }

    public func click(_ element: Element) async throws { try await command(.POST, "/element/\(element.id)/click") }

    /// Clicks a link or a form's button and waits until the page it leads to has loaded. chromedriver's click can
    /// return before a form's POST has replaced the page (seen under load), and the next lookup then reads the old
    /// page: the old document is marked, and the wait ends when a document without the mark is complete.
    public func follow(_ element: Element, timeout: Duration = .seconds(60)) async throws {
        try await script("document.documentElement.setAttribute('data-till-left', '1'); return true")
        try await click(element)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let arrived = try? await script(
                "return document.readyState === 'complete' && !document.documentElement.hasAttribute('data-till-left')"
            )
            if arrived as? Bool == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "no page loaded within \(timeout) after the click")
    }

    public func text(of element: Element) async throws -> String {
        try await command(.GET, "/element/\(element.id)/text") as? String ?? ""
    }

    /// Chooses the `<option>` of a `<select>` whose value is `value`.
    public func select(_ value: String, in selector: String) async throws {
        try await click(try await find("\(selector) option[value=\"\(value)\"]"))
    }

    /// The page's visible text.
    public func pageText() async throws -> String { try await text(of: try await find("body")) }

    /// Runs `script` (a function body: `return …`) in the page; answers its value.
    @discardableResult
    public func script(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command(.POST, "/execute/sync", ["script": script, "args": arguments])
    }

    /// Presses keys on whatever has the focus (WebDriver's key codes: `\u{E004}` is Tab, `\u{E007}` Enter).
    public func press(_ keys: String) async throws {
        let actions = keys.unicodeScalars.flatMap { key in
            [["type": "keyDown", "value": String(key)], ["type": "keyUp", "value": String(key)]]
        }
        try await command(
            .POST,
            "/actions",
            ["actions": [["type": "key", "id": "keyboard", "actions": actions]]]
        )
    }

    /// A PNG of the viewport.
    public func screenshot() async throws -> Data {
        guard let encoded = try await command(.GET, "/screenshot") as? String, let data = Data(base64Encoded: encoded)
        else { throw Failure(description: "no screenshot") }
        return data
    }

    /// A PNG of the whole page, as tall as its content (DevTools' `Page.captureScreenshot` beyond the viewport).
    public func fullPageScreenshot() async throws -> Data {
        let metrics = try await devTools("Page.getLayoutMetrics") as? [String: Any]
        let size = metrics?["cssContentSize"] as? [String: Any]
        let width = (size?["width"] as? Double) ?? 1280
        let height = min((size?["height"] as? Double) ?? 900, 8000)
        let shot = try await devTools(
            "Page.captureScreenshot",
            [
                "format": "png", "captureBeyondViewport": true,
                "clip": ["x": 0, "y": 0, "width": width, "height": height, "scale": 1],
            ]
        )
        guard let encoded = (shot as? [String: Any])?["data"] as? String, let data = Data(base64Encoded: encoded) else {
            throw Failure(description: "no screenshot")
        }
        return data
    }

    // MARK: DevTools

    /// A DevTools protocol command, through chromedriver.
    @discardableResult
    public func devTools(_ command: String, _ parameters: [String: Any] = [:]) async throws -> Any? {
        try await self.command(.POST, "/goog/cdp/execute", ["cmd": command, "params": parameters])
    }

    /// A node of the browser's accessibility tree: its role, its computed name, whether it is ignored, and whether
    /// it can take the focus.
    public struct AXNode: Sendable, CustomStringConvertible {
        public var role: String
        public var name: String
        public var ignored: Bool
        public var focusable: Bool
        public var description: String { "\(role) \"\(name)\"" }
    }

    /// The page's whole accessibility tree, as Chromium computes it for assistive technology.
    public func accessibilityTree() async throws -> [AXNode] {
        try await devTools("Accessibility.enable")
        let answer = try await devTools("Accessibility.getFullAXTree") as? [String: Any]
        return (answer?["nodes"] as? [[String: Any]] ?? []).map { node in
            func value(_ key: String) -> String {
                let field = node[key] as? [String: Any]
                return (field?["value"] as? String) ?? ""
            }
            let properties = node["properties"] as? [[String: Any]] ?? []
            let focusable = properties.contains {
                $0["name"] as? String == "focusable" && (($0["value"] as? [String: Any])?["value"] as? Bool) == true
            }
            return AXNode(
                role: value("role"),
                name: value("name"),
                ignored: node["ignored"] as? Bool ?? false,
                focusable: focusable
            )
        }
    }
}
