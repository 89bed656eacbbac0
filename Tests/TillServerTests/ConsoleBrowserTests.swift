import Foundation
import Hummingbird
import Testing
import TillAppStore
import TillConsole
import TillContract
import TillCore
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The console in a real browser: Debian's Chromium, headless, driven through chromedriver (`Browser`), against a
/// server on a loopback port with purchases confirmed by the simulator, a refund Apple notified, and a submission
/// dead-lettered while Apple answered 503. Every page is visited; each one's screenshot is kept as a test artifact
/// (`.build/test-artifacts/console/`, or `$TILL_TEST_ARTIFACTS/console/`), and its accessibility is checked through
/// the browser: every control and image named in Chromium's accessibility tree, text contrast (WCAG AA) as the
/// browser computes the colours, every control reached with the Tab key, and no page wider than a phone's screen.
@Suite(
    .sharingTheMachine,
    .enabled(if: Browser.prerequisite.shouldRun, Comment(rawValue: Browser.prerequisite.skipMessage))
)
struct ConsoleBrowserTests {
    static let app = ServerFixture.bundleId

    @Test(.timeLimit(.minutes(10))) func everyPageAndActionWorksInChromium() async throws {
        try await ServerFixture.run(
            confirmation: .init(maximumAttempts: 2, backoffBase: .milliseconds(20), backoffCap: .milliseconds(50))
        ) { fixture in
            let server = fixture.server
            try await withServices({ ready in
                Application(
                    router: buildServerRouter(server),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "till"),
                    onServerRunning: { await ready($0.localAddress?.port ?? 0) }
                )
            }) { port in
                let base = "http://127.0.0.1:\(port)"
                let (deadLetter, refunded) = try await Self.traffic(fixture, serverURL: base)
                try await Browser.run { browser in
                    try await Self.walk(
                        browser,
                        base: base,
                        fixture: fixture,
                        deadLetter: deadLetter,
                        refunded: refunded
                    )
                }
            }
        }
    }

    /// Purchases like `till demo`'s: ann buys gems, Pro and a subscription (confirmed with the simulator), Pro is
    /// refunded (Apple's notification reaches the server); bob's receipt is dead-lettered while Apple answers 503.
    /// Answers bob's submission and the refunded transaction.
    static func traffic(_ fixture: ServerFixture, serverURL: String) async throws -> (
        deadLetter: String, refunded: String
    ) {
        let server = fixture.server
        let url = serverURL + "/v1/apple/notifications"
        _ = try await fixture.simulator.appStoreConnect.updateApp(
            appAppleId: try #require(fixture.app.appAppleId),
            AppPatch(notificationUrlProduction: url, notificationUrlSandbox: url)
        )
        var pro = ""
        for product in ["gems.100", "pro", "premium.monthly", "gems.100"] {
            let purchase = try await fixture.buy(product)
            if product == "pro" { pro = try #require(purchase.transactionId) }
            let submitted = try await server.intake.submit(
                SubmissionRequest(customerId: "ann", signedTransaction: purchase.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(submitted).state == .confirmed)
        }
        _ = try await fixture.simulator.subscriptions.refund(transactionId: pro, reason: 1)
        try await waitUntil {
            try await server.customers.customer(bundleId: app, customerId: "ann").entitlements.allSatisfy {
                $0.id != "pro"
            }
        }
        let outage = try FaultRule(parsing: "*:verifyReceipt:outage=503")
        fixture.simulator.faults.add(outage)
        _ = try await fixture.buy("issue.1")
        let submitted = try await server.intake.submit(
            SubmissionRequest(customerId: "bob", receipt: try await fixture.receipt()),
            app: fixture.app
        )
        #expect(try await fixture.settled(submitted).state == .deadLettered)
        #expect(fixture.simulator.faults.remove(id: outage.id))
        return (submitted.submission.id, pro)
    }

    static func walk(_ browser: Browser, base: String, fixture: ServerFixture, deadLetter: String, refunded: String)
        async throws
    {
        let server = fixture.server
        let shots = Screenshots()

        // Sign in: the console sends a stranger to its sign-in page.
        try await browser.go(base + "/console/overview?app=\(app)")
        #expect(try await browser.currentPath().hasPrefix("/console/sign-in"))
        try await check(browser, "sign-in", shots)
        try await browser.type("not-the-token", into: try await browser.find("#token"))
        try await browser.follow(try await browser.find("main form button[type=submit]"))
        #expect(try await browser.currentPath().hasPrefix("/console/sign-in"))
        try await browser.type("operator", into: try await browser.find("#token"))
        try await browser.follow(try await browser.find("main form button[type=submit]"))
        #expect(try await browser.currentPath().hasPrefix("/console/overview"))

        // The overview's charts are drawn from the figures: the sandbox's, chosen in the form.
        try await browser.select("Sandbox", in: "#environment")
        try await browser.follow(try await browser.find("form.filters button[type=submit]"))
        #expect(try await browser.currentPath().contains("environment=Sandbox"))
        let day = FigureChange.dayLength
        let today = FigureChange.day(of: server.nowMilliseconds) * day
        let figures = try await server.figures.overview(
            bundleId: app,
            environment: .sandbox,
            from: today - 29 * day,
            to: today + day,
            bucket: .day
        )
        let revenue = try #require(figures.money["USD"]?.revenue)
        #expect(revenue > 0)
        let drawn = try await browser.script(
            """
            return [...document.querySelectorAll('svg[data-chart="revenue-usd"] rect[data-value]')]
              .reduce((sum, bar) => sum + Number(bar.dataset.value), 0);
            """
        )
        #expect((drawn as? NSNumber)?.int64Value == revenue, "bars add up to \(String(describing: drawn))")
        #expect(
            try await browser.text(of: try await browser.find("[data-figure=\"revenue-USD\"]"))
                == Readable.money(revenue)
        )
        #expect(try await browser.findAll("svg[data-chart] rect[data-value]").count >= 30)
        try await check(browser, "overview", shots)
        try await browser.setWindow(width: 390, height: 844)
        try await check(browser, "overview-phone", shots)
        try await browser.setWindow(width: 1280, height: 900)

        // Find a customer: by the beginning of the id (a list), then by a transaction id (straight to them).
        try await browser.follow(try await browser.find("nav[aria-label=Console] a[href^=\"/console/customers\"]"))
        try await browser.type("an", into: try await browser.find("#q"))
        try await browser.follow(try await browser.find("form[role=search] button[type=submit]"))
        #expect(try await browser.pageText().contains("1 customer"))
        try await check(browser, "customers", shots)
        try await browser.type(refunded, into: try await browser.find("#q"))
        try await browser.follow(try await browser.find("form[role=search] button[type=submit]"))
        #expect(try await browser.currentPath().hasPrefix("/console/customers/ann"))
        try await browser.follow(try await browser.find("nav[aria-label=Console] a[href^=\"/console/customers\"]"))
        try await browser.type("an", into: try await browser.find("#q"))
        try await browser.follow(try await browser.find("form[role=search] button[type=submit]"))
        try await browser.follow(try await browser.find("main table a[href*=\"/console/customers/ann\"]"))
        #expect(try await browser.currentPath().hasPrefix("/console/customers/ann"))

        // Grant by hand, and see it in the timeline as manual.
        try await browser.select("pro", in: "#grant-product")
        try await browser.type("goodwill after ticket 42", into: try await browser.find("#grant-note"))
        try await browser.follow(try await browser.find("form[action$=\"/grant\"] button[type=submit]"))
        #expect(try await browser.pageText().contains("Granted pro to ann."))
        let first = try await browser.text(of: try await browser.find("ol.timeline li"))
        #expect(first.contains("manual"), "the timeline's newest entry: \(first)")
        #expect(try await browser.findAll("[data-list=entitlements] .badge.manual").count == 1)
        #expect(
            try await server.customers.customer(bundleId: app, customerId: "ann").entitlements.map(\.id).contains("pro")
        )
        try await check(browser, "customer", shots)
        try await browser.setWindow(width: 390, height: 844)
        try await check(browser, "customer-phone", shots)
        try await browser.setWindow(width: 1280, height: 900)

        // A form sent without the CSRF token (as another site's page would send it) is refused, and changes nothing.
        let before = try await server.customers.customer(bundleId: app, customerId: "ann").balances["gems"]
        try await browser.script(
            """
            const form = document.querySelector('form[action$="/adjust"]');
            form.querySelector('input[name=csrf]').remove();
            form.querySelector('#adjust-credit').value = 'gems';
            form.querySelector('#adjust-delta').value = '1000';
            form.querySelector('#adjust-note').value = 'forged';
            form.submit();
            """
        )
        try await waitUntil { try await browser.pageText().contains("Refused") }
        #expect(try await browser.pageText().contains("csrfTokenMissing"))
        #expect(try await server.customers.customer(bundleId: app, customerId: "ann").balances["gems"] == before)
        try await shots.keep(browser, "csrf-refused")

        // Retry a dead letter: Apple answers again, and it is confirmed.
        try await browser.go(base + "/console/queue?state=deadLettered&app=\(app)")
        #expect(try await browser.findAll("tr[data-submission=\"\(deadLetter)\"]").count == 1)
        try await check(browser, "queue", shots)
        try await browser.type("Apple is back", into: try await browser.find("#note-\(deadLetter)"))
        try await browser.follow(
            try await browser.find("tr[data-submission=\"\(deadLetter)\"] button[type=submit]")
        )
        #expect(try await browser.pageText().lowercased().contains("retry"))
        try await waitUntil {
            try await server.intake.submission(id: deadLetter, bundleId: app).state == .confirmed
        }

        // Every other page: Apple's health, notifications (Apple's refund among them), catalogue, apps, activity.
        try await browser.go(base + "/console/health?app=\(app)")
        try await check(browser, "health", shots)
        try await browser.go(base + "/console/notifications?app=\(app)")
        #expect(try await browser.pageText().contains("REFUND"))
        try await check(browser, "notifications", shots)
        try await browser.follow(try await browser.find("main table a[href^=\"/console/notifications/\"]"))
        try await check(browser, "notification", shots)
        try await browser.go(base + "/console/catalogue?app=\(app)")
        try await check(browser, "catalogue", shots)
        try await browser.follow(try await browser.find("main a[href^=\"/console/catalogue/premium.monthly\"]"))
        try await check(browser, "product", shots)
        try await browser.go(base + "/console/apps?app=\(app)")
        try await check(browser, "apps", shots)
        try await browser.go(base + "/console/apps/\(app)")
        try await check(browser, "app", shots)
        // An import of ann's history (every transaction known already), read to its end, and its pages.
        let (started, _) = try await fixture.server.imports.start(
            bundleId: app,
            name: "customers.csv",
            file: Array("customerId,transactionId\nann,\(refunded)\n".utf8)
        )
        try await withServices({ _ in ServiceBox(ImportWorker(server: fixture.server)) }) { _ in
            try await waitUntil(timeout: .seconds(60)) {
                try await fixture.server.imports.view(id: started.id, bundleId: app).state == .finished
            }
        }
        try await browser.go(base + "/console/imports?app=\(app)")
        try await check(browser, "imports", shots)
        try await browser.follow(try await browser.find("main table a[href^=\"/console/imports/\"]"))
        #expect(try await browser.pageText().contains("Already known"))
        try await check(browser, "import", shots)
        try await browser.go(base + "/console/activity?app=\(app)")
        let activity = try await browser.pageText()
        #expect(activity.contains("goodwill after ticket 42") && activity.contains("Apple is back"))
        try await check(browser, "activity", shots)

        // Sign out: the console is closed again.
        try await browser.follow(try await browser.find("form[action=\"/console/sign-out\"] button"))
        try await waitUntil { try await browser.currentPath().hasPrefix("/console/sign-in") }
        try await browser.go(base + "/console/customers/ann?app=\(app)")
        #expect(try await browser.currentPath().hasPrefix("/console/sign-in"))
    }

    /// Keeps the page's screenshot and checks its accessibility through the browser.
    static func check(_ browser: Browser, _ name: String, _ shots: Screenshots) async throws {
        try await shots.keep(browser, name)
        let page = try await browser.currentPath()
        #expect(try await browser.script("return document.readyState") as? String == "complete")

        // Names, from Chromium's accessibility tree: what a screen reader announces.
        let tree = try await browser.accessibilityTree().filter { !$0.ignored }
        let controls: Set<String> = [
            "link", "button", "textbox", "searchbox", "combobox", "checkbox", "radio", "spinbutton", "listbox",
            "slider", "switch", "date", "DateTime", "InputTime", "tab",
        ]
        let unnamed = tree.filter {
            (controls.contains($0.role) || $0.role == "image")
                && $0.name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        }
        #expect(unnamed.isEmpty, "\(name) (\(page)): without an accessible name: \(unnamed)")
        #expect(tree.contains { $0.role == "main" }, "\(name): no main landmark")
        #expect(tree.contains { $0.role == "heading" && !$0.name.isEmpty }, "\(name): no heading")
        #expect(!(try await browser.title()).isEmpty)

        // Contrast of every visible text, from the colours the browser computed (WCAG AA: 4.5, 3 for large text).
        let low = try await browser.script(contrastScript) as? [String] ?? ["the contrast script failed"]
        #expect(low.isEmpty, "\(name) (\(page)): text below WCAG AA contrast: \(low)")

        // The keyboard: Tab reaches every control, each showing where the focus is. A second pass where the first
        // missed one: on a loaded machine Chromium once reported the skip link focused without its ring (the import's
        // page, in one full run of 3, the CSS unchanged); a control that lacks its ring, or is never reached, misses
        // both.
        var missed: [String] = []
        for _ in 1...2 {
            let count = try await browser.script(focusScript) as? Int ?? 0
            try await browser.press(String(repeating: "\u{E004}", count: 2 * count + 2))
            missed =
                try await browser.script(
                    """
                    const reached = new Set(window.__tillFocused.map(f => f.element));
                    return window.__tillFocusables().filter(e => !reached.has(e)).map(e => e.outerHTML.slice(0, 100))
                      .concat(window.__tillFocused.filter(f => !f.visible).map(f => 'no focus ring: ' + f.element.outerHTML.slice(0, 100)));
                    """
                ) as? [String] ?? ["the focus script failed"]
            if missed.isEmpty { break }
        }
        #expect(missed.isEmpty, "\(name) (\(page)): not reached by Tab, or focus not shown: \(missed)")

        // Nothing wider than the window (a phone's, for the -phone pages).
        let overflow = try await browser.script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        #expect(
            ((overflow as? NSNumber)?.intValue ?? 1) <= 0,
            "\(name): wider than the window by \(String(describing: overflow)) px"
        )
    }

    /// Text below WCAG AA contrast, as `tag "text" ratio < needed` lines. Colours are the browser's computed ones, the
    /// background the first opaque one behind the text (translucent layers blended).
    static let contrastScript = """
        const parse = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
          const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
          return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
        const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
          return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
        const blend = (top, under) => ({ r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a),
          b: top.b * top.a + under.b * (1 - top.a), a: 1 });
        const behind = el => { const layers = [];
          for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor);
            if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; } }
          let base = { r: 255, g: 255, b: 255, a: 1 };
          for (const c of layers.reverse()) base = blend(c, base);
          return base; };
        const low = [];
        for (const el of document.querySelectorAll('body *')) {
          if (el.closest('svg') || el.tagName === 'OPTION' || el.tagName === 'SCRIPT') continue;
          if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
          const r = el.getBoundingClientRect(); if (r.width <= 1 || r.height <= 1) continue;
          const s = getComputedStyle(el); if (s.visibility === 'hidden' || Number(s.opacity) === 0) continue;
          const back = behind(el); const fore = blend(parse(s.color), back);
          const a = lum(fore), b = lum(back);
          const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
          const size = parseFloat(s.fontSize), bold = Number(s.fontWeight) >= 700;
          const needed = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
          if (ratio < needed) low.push(el.tagName + ' "' + el.textContent.trim().slice(0, 40) + '" ' + ratio.toFixed(2) + ' < ' + needed);
        }
        return low;
        """

    /// Starts listening to the focus (each element focused, and whether it shows an outline or a ring), moves the
    /// focus before the page's first control, and answers how many controls the page has.
    static let focusScript = """
        window.__tillFocusables = () => [...document.querySelectorAll(
            'a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex="-1"])')]
          .filter(e => !e.disabled && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden');
        window.__tillFocused = [];
        if (!window.__tillListening) {
          window.__tillListening = true;
          document.addEventListener('focusin', event => {
            const s = getComputedStyle(event.target);
            const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
            window.__tillFocused.push({ element: event.target, visible: ring });
          });
        }
        if (document.activeElement) document.activeElement.blur();
        window.scrollTo(0, 0);
        return window.__tillFocusables().length;
        """
}

/// Where the screenshots go: `$TILL_TEST_ARTIFACTS/console/`, else `.build/test-artifacts/console/` in the package.
final class Screenshots: Sendable {
    let directory: URL

    init() {
        let root =
            ProcessInfo.processInfo.environment["TILL_TEST_ARTIFACTS"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts")
        directory = root.appendingPathComponent("console")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func keep(_ browser: Browser, _ name: String) async throws {
        let png = try await browser.fullPageScreenshot()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(name): not a PNG")
        try png.write(to: directory.appendingPathComponent(name + ".png"))
    }
}
