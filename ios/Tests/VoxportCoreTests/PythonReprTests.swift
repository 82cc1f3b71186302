import XCTest

@testable import VoxportCore

/// `PythonRepr` against what CPython 3.11's `repr` prints for the same strings (the expected
/// values were printed by `python3 -c 'print(repr(...))'`, not by this code).
final class PythonReprTests: XCTestCase {
    func testQuotesAndEscapesLikePython() {
        XCTAssertEqual(PythonRepr.string("T128"), "'T128'")
        XCTAssertEqual(PythonRepr.string("it's"), "\"it's\"")
        XCTAssertEqual(PythonRepr.string("a'b\"c"), "'a\\'b\"c'")
        XCTAssertEqual(PythonRepr.string("tab\there\nback\\slash"), "'tab\\there\\nback\\\\slash'")
        XCTAssertEqual(PythonRepr.list(["T128", "T256"]), "['T128', 'T256']")
    }

    /// A quote followed by a combining mark is one Character but two scalars: Python escapes the
    /// quote (repr("a'\u0301\"") == 'a\'́"'), so the quote must be seen as a scalar.
    func testAQuoteUnderACombiningMarkIsStillEscaped() {
        XCTAssertEqual(PythonRepr.string("a'\u{301}\""), "'a\\'\u{301}\"'")
    }

    func testCodePointsAsPythonsFormat() {
        XCTAssertEqual(PythonRepr.hex4(0x41), "0041")
        XCTAssertEqual(PythonRepr.hex4(0x1F600), "1F600")
    }
}
