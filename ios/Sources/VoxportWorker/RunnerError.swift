import Foundation

/// Every error a runner raises on purpose. `kind` says how a host should react; `type` is the
/// Python error class a worker reported (`InputSpecError`, `UserError`, ...), when one did.
public struct RunnerError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    public enum Kind: String, Sendable {
        /// Bad input the runtime refused: a wrong name, shape or dtype (Python `InputSpecError`).
        case inputSpec
        /// Any other user mistake (an unknown graph or function, a missing bundle: `UserError`).
        case user
        /// The runtime failed a call but lives on (an unexpected error in the worker).
        case runtime
        /// The runtime process died (a Swift fatal error in Core AI aborts it): `RuntimeCrash`.
        case runtimeCrash
        /// The worker did not answer before the runner's timeout (it was killed).
        case timeout
        /// The worker's byte stream is not `voxport-worker/1` frames.
        case protocolError
        /// The worker could not be started (no executable, or it exited before `ready`).
        case launch
        /// A replayed call differs from the recording.
        case replayMismatch
        /// The runner was closed.
        case closed
    }

    public let kind: Kind
    public let message: String
    public let type: String?

    public init(_ kind: Kind, _ message: String, type: String? = nil) {
        self.kind = kind
        self.message = message
        self.type = type
    }

    public var description: String { message }
    public var errorDescription: String? { message }
}
