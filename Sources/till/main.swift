import TillFormats
print(try await VerificationBenchmark.jws(duration: .seconds(6)))
