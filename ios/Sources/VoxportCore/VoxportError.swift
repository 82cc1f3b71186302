import Foundation

/// Every error VoxportKit raises on purpose. `kind` mirrors the Python error classes
/// (`conversion/core/errors.py`) so a host can react the same way; `message` names the fix.
public struct VoxportError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    public enum Kind: String, Sendable {
        /// Bad input (Python `UserError`).
        case user
        /// No bundle or no manifest at the path (`BundleNotFoundError`).
        case bundleNotFound
        /// A bundle on disk does not match its manifest (`BundleIntegrityError`).
        case bundleIntegrity
        /// A manifest format version this VoxportKit does not know.
        case unsupportedFormat
        /// Input longer than the largest bucket (`BucketOverflowError`).
        case bucketOverflow
        /// A file VoxportKit cannot parse (npy/npz/wav/raw).
        case malformedFile
        /// Reading or writing the file system failed.
        case io
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
    public var errorDescription: String? { message }
}
