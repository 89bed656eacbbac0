extension OpenStepPlist {
    /// The document in Apple's layout: one entry a line, indented with tabs, every string quoted,
    /// no newline after the closing brace:
    ///
    /// ```
    /// {
    /// 	"key" = "value";
    /// 	"nested" = {
    /// 		"a" = "b";
    /// 	};
    /// 	"list" = (
    /// 		"x",
    /// 		"y"
    /// 	);
    /// }
    /// ```
    ///
    /// The output is ASCII: control characters are written as octal escapes (`\n`, `\t`, `\r`, `\"`
    /// and `\\` by name) and non-ASCII characters as `\UXXXX` UTF-16 escapes, so parsing it gives
    /// back the same value.
    public func serialized() -> String {
        var output = ""
        write(to: &output, indent: 0)
        return output
    }

    /// ``serialized()`` as UTF-8 bytes.
    public func serializedBytes() -> [UInt8] {
        Array(serialized().utf8)
    }

    private func write(to output: inout String, indent: Int) {
        switch self {
        case .string(let text):
            Self.writeQuoted(text, to: &output)
        case .dictionary(let entries):
            output += "{\n"
            for entry in entries {
                output += String(repeating: "\t", count: indent + 1)
                Self.writeQuoted(entry.key, to: &output)
                output += " = "
                entry.value.write(to: &output, indent: indent + 1)
                output += ";\n"
            }
            output += String(repeating: "\t", count: indent) + "}"
        case .array(let elements):
            output += "(\n"
            for (position, element) in elements.enumerated() {
                output += String(repeating: "\t", count: indent + 1)
                element.write(to: &output, indent: indent + 1)
                output += position == elements.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: "\t", count: indent) + ")"
        }
    }

    private static func writeQuoted(_ text: String, to output: inout String) {
        output += "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: output += "\\\""
            case 0x5C: output += "\\\\"
            case 0x0A: output += "\\n"
            case 0x09: output += "\\t"
            case 0x0D: output += "\\r"
            case 0x20..<0x7F: output.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            case 0..<0x20, 0x7F:
                let octal = String(unit, radix: 8)
                output += "\\" + String(repeating: "0", count: 3 - octal.count) + octal
            default:
                let hex = String(unit, radix: 16)
                output += "\\U" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        output += "\""
    }
}
