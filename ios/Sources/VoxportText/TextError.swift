/// Text a front end refuses (empty, a reference voice without its transcript), with the Python
/// host's wording, so the app shows what `voxport speak` prints.
public struct TextError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
