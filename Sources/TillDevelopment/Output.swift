import Foundation

/// Writes a line to standard output at once (print() is buffered when the output is a file or a pipe).
public func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
