import XCTest

/// `XCTAssertThrowsError` for an expression that awaits (XCTest's autoclosures cannot): fails
/// when `expression` returns, else hands its error to `errorHandler`.
public func assertThrowsAsync<T>(
    _ expression: () async throws -> T, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line, _ errorHandler: (_ error: Error) -> Void = { _ in }
) async {
    do {
        _ = try await expression()
        let m = message()
        XCTFail("assertThrowsAsync failed: did not throw an error" + (m.isEmpty ? "" : " - \(m)"), file: file, line: line)
    } catch {
        errorHandler(error)
    }
}

/// `XCTAssertNoThrow` for an expression that awaits: an error is a failure, not a throw.
public func assertNoThrowAsync<T>(
    _ expression: () async throws -> T, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) async {
    do {
        _ = try await expression()
    } catch {
        let m = message()
        XCTFail("assertNoThrowAsync failed: threw error \"\(error)\"" + (m.isEmpty ? "" : " - \(m)"), file: file, line: line)
    }
}
