extension Components.Schemas.SubmissionState {
    /// Whether Apple's answer is in (or the server stopped asking): not `pending`, not `retrying`.
    public var isSettled: Bool { self != .pending && self != .retrying }
}
