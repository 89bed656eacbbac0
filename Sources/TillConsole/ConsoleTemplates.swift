import Foundation
import Mustache

/// The console's Mustache templates (`Templates`, compiled into the binary), parsed once, and its stylesheet
/// and script.
///
/// A page is rendered from a context of dictionaries, arrays and plain values built by `ConsolePages`: every text is
/// HTML-escaped by Mustache (`{{…}}`); only the server's own SVG charts go in unescaped (`{{{svg}}}`), their text
/// escaped by `SVGChart`.
package struct ConsoleTemplates: Sendable {
    let library: MustacheLibrary

    static let pages: [(name: String, source: [UInt8])] = [
        ("layout", PackageResources.layout_mustache),
        ("sign-in", PackageResources.sign_in_mustache),
        ("message", PackageResources.message_mustache),
        ("overview", PackageResources.overview_mustache),
        ("customers", PackageResources.customers_mustache),
        ("customer", PackageResources.customer_mustache),
        ("queue", PackageResources.queue_mustache),
        ("health", PackageResources.health_mustache),
        ("notifications", PackageResources.notifications_mustache),
        ("notification", PackageResources.notification_mustache),
        ("catalogue", PackageResources.catalogue_mustache),
        ("product", PackageResources.product_mustache),
        ("apps", PackageResources.apps_mustache),
        ("app", PackageResources.app_mustache),
        ("activity", PackageResources.activity_mustache),
        ("imports", PackageResources.imports_mustache),
        ("import", PackageResources.import_mustache),
    ]

    package static let stylesheet: [UInt8] = PackageResources.console_css
    package static let uploadScript: [UInt8] = PackageResources.upload_js

    package init() throws {
        var library = MustacheLibrary()
        for page in Self.pages {
            try library.register(String(decoding: page.source, as: UTF8.self), named: page.name)
        }
        self.library = library
    }

    /// The page `name` rendered with `context`, each array in it given a `has_<name>` flag (Mustache cannot ask
    /// whether a list is empty before it is printed).
    package func render(_ name: String, _ context: [String: Any]) -> String {
        library.render(Self.flagged(context), withTemplate: name) ?? ""
    }

    /// `context` with `has_<key>` beside every array, at every depth.
    static func flagged(_ value: Any) -> Any {
        if let dictionary = value as? [String: Any] {
            var out: [String: Any] = [:]
            for (key, item) in dictionary {
                out[key] = flagged(item)
                if let array = item as? [Any] { out["has_" + key] = !array.isEmpty }
            }
            return out
        }
        if let array = value as? [[String: Any]] { return array.map { flagged($0) } }
        return value
    }
}
