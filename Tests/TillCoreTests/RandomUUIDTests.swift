import Foundation
import Testing
import TillCore

@Suite struct RandomUUIDTests {
    @Test func randomUUIDsAreVersion4AndDistinct() {
        let made = (0..<1000).map { _ in UUID.random() }
        #expect(Set(made).count == 1000)
        for uuid in made {
            let text = uuid.uuidString
            // xxxxxxxx-xxxx-4xxx-[89AB]xxx-xxxxxxxxxxxx
            let characters = Array(text)
            #expect(characters[14] == "4", "\(text)")
            #expect("89AB".contains(characters[19]), "\(text)")
        }
    }
}
