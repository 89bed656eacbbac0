import HTTPTypes
import Testing
import TillHTTPKit

/// `single`: the value of a field a message carries once, as the app key and the request id are read.
struct HTTPFieldsSingleTests {
    @Test func aFieldSentOnceIsItsValueWhateverTheCaseOfItsName() {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields.append(HTTPField(name: HTTPField.Name("authorization")!, value: "Bearer tk_1"))
        #expect(fields.single(.authorization) == "Bearer tk_1")
        // The one reading `self[name]` gives for a field sent once.
        #expect(fields.single(.authorization) == fields[.authorization])
    }

    @Test func anAbsentFieldIsNil() {
        #expect(HTTPFields([HTTPField(name: .contentType, value: "text/plain")]).single(.authorization) == nil)
        #expect(HTTPFields().single(.authorization) == nil)
    }

    /// A repeated field has no single value: the app key middleware refuses it (it did when the two were joined into
    /// one key, which matched no app) and the request id middleware makes a new id.
    @Test func aRepeatedFieldIsNil() {
        let fields = HTTPFields([
            HTTPField(name: .authorization, value: "Bearer tk_1"),
            HTTPField(name: .accept, value: "*/*"),
            HTTPField(name: .authorization, value: "Bearer tk_1"),
        ])
        #expect(fields.single(.authorization) == nil)
        #expect(fields.single(.accept) == "*/*")
    }
}
