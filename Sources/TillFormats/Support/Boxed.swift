/// An optional value kept on the heap, so that the struct holding it stays small.
///
/// Swift keeps what an async function holds across a suspension in a frame taken from its task's allocator, one
/// slot for each value, copies included. A verifyReceipt answer holds up to four kilobyte-sized objects inline
/// (the receipt, and the three shapes of an iOS 6-style transaction), so each function that awaited with one made
/// its frame tens of kilobytes: the simulator's verifyReceipt took some 80 KB a call from malloc, held while Apple's
/// latency was played, for thousands of calls at once (heaptrack, `till bench submissions`). Boxed, each is a
/// pointer, and nothing is allocated while it is nil.
@propertyWrapper
public struct Boxed<Wrapped: Sendable>: Sendable {
    private final class Box: Sendable {
        let value: Wrapped
        init(_ value: Wrapped) { self.value = value }
    }

    private var box: Box?

    public init(wrappedValue: Wrapped?) {
        box = wrappedValue.map(Box.init)
    }

    public var wrappedValue: Wrapped? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }
}

extension Boxed: Equatable where Wrapped: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.wrappedValue == rhs.wrappedValue }
}

extension Boxed: Hashable where Wrapped: Hashable {
    public func hash(into hasher: inout Hasher) { hasher.combine(wrappedValue) }
}
