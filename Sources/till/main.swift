import TillFormats
let result = try await VerificationBenchmark.receipts(duration: .seconds(3))
print(result)
