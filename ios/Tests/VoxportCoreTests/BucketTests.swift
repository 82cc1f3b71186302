import Foundation
import XCTest
import VoxportCore

final class BucketTests: XCTestCase {
    struct Need: Decodable {
        let name: String
        let size: Int
        init(from decoder: Decoder) throws {
            var c = try decoder.unkeyedContainer()
            name = try c.decode(String.self)
            size = try c.decode(Int.self)
        }
    }

    struct Case: Decodable {
        let needs: [Need]
        let label: String?
        let bucket: [String: Int]?
        let error: String?
        let message: String?
    }

    struct Table: Decodable {
        let buckets: [[String: Int]]
        let dims: [String]
        let sorted_labels: [String]
        let limits: [String: Int]
        let cases: [Case]
    }

    struct TableError: Decodable {
        let buckets: [[String: Int]]
        let message: String
    }

    struct File: Decodable {
        let one_dim: Table
        let two_dim: Table
        let table_errors: [String: TableError]
    }

    func testSelectionAndMessagesEqualPythons() throws {
        let f = try Fixtures.decode(File.self, "buckets.json")
        var checked = 0
        for t in [f.one_dim, f.two_dim] {
            let table = try BucketTable(t.buckets)
            XCTAssertEqual(table.dims, t.dims)
            XCTAssertEqual(table.buckets.map(\.label), t.sorted_labels)
            XCTAssertEqual(table.limits, t.limits)
            for c in t.cases {
                let needs = c.needs.map { ($0.name, $0.size) }
                let what = "\(needs)"
                if let label = c.label {
                    let b = try table.select(needs)
                    XCTAssertEqual(b.label, label, what)
                    XCTAssertEqual(b.sizes, c.bucket, what)
                } else {
                    let e = expectError { _ = try table.select(needs) }
                    XCTAssertEqual(e?.kind, c.error == "BucketOverflowError" ? .bucketOverflow : .user, what)
                    XCTAssertEqual(e?.message, c.message, what)
                }
                checked += 1
            }
        }
        XCTAssertEqual(checked, 22)
    }

    func testTableConstructionErrorsEqualPythons() throws {
        let f = try Fixtures.decode(File.self, "buckets.json")
        XCTAssertEqual(f.table_errors.count, 2)
        for (name, t) in f.table_errors {
            XCTAssertEqual(expectError { _ = try BucketTable(t.buckets) }?.message, t.message, name)
        }
    }

    func testDictionarySelectAndHelpers() throws {
        let table = try BucketTable.oneDim("T", sizes: [64, 16, 32])
        XCTAssertEqual(try table.select(["T": 17]).label, "T32")
        XCTAssertEqual(try table.select([("T", 16)]).volume, 16)
        XCTAssertEqual(Bucket(["T": 128, "L": 512]).label, "L512_T128")
        XCTAssertEqual(Bucket([:]).volume, 0)
    }
}
