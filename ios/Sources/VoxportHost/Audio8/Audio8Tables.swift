import Foundation
import VoxportCore

/// `audio8_host.json`: every number and id the Python host reads from outside the graphs
/// (`conversion/audio8_tts/host_files.py` writes it from the tokenizer and the configs), so a
/// device needs neither the tokenizer nor the Python packages.
public struct Audio8Tables: Decodable, Sendable {
    public static let fileName = "audio8_host.json"
    public static let format = "voxport-audio8-host/1"

    /// The prompt template's fixed segments as ids; TEXT and the reference transcript go
    /// between them (each segment was encoded alone, so joining them is exact).
    public struct Prompt: Decodable, Sendable {
        public let plainPrefix: [Int32]
        public let referencePrefix: [Int32]
        public let speechHeader: [Int32]
        public let suffixHead: [Int32]
        public let tail: [Int32]
        enum CodingKeys: String, CodingKey {
            case plainPrefix = "plain_prefix", referencePrefix = "reference_prefix"
            case speechHeader = "speech_header", suffixHead = "suffix_head", tail
        }
    }

    public struct Tokens: Decodable, Sendable {
        public let eos: Int32
        public let pad: Int32
        public let semanticBegin: Int32
        public let semanticEnd: Int32
        public let vocabSize: Int
        enum CodingKeys: String, CodingKey {
            case eos, pad, semanticBegin = "semantic_begin", semanticEnd = "semantic_end", vocabSize = "vocab_size"
        }
    }

    public struct Frame: Decodable, Sendable {
        public let numCodebooks: Int
        public let codebookSize: Int
        public let maxSeqLen: Int
        public let prefillWindow: Int
        public let rasWindow: Int
        public let maxNewFrames: Int
        /// Piece `i` of an utterance draws from `seed * stride + i` (the pipeline's rule).
        public let pieceSeedStride: Int
        enum CodingKeys: String, CodingKey {
            case numCodebooks = "num_codebooks", codebookSize = "codebook_size", maxSeqLen = "max_seq_len"
            case prefillWindow = "prefill_window", rasWindow = "ras_window", maxNewFrames = "max_new_frames"
            case pieceSeedStride = "piece_seed_stride"
        }
        /// Rows of a prompt column: the semantic/text id, then one per codebook.
        public var rows: Int { numCodebooks + 1 }
    }

    public struct Codec: Decodable, Sendable {
        public let frameSize: Int
        public let sampleRate: Int
        public let bookSizes: [Int]
        public let contextFrames: Int
        enum CodingKeys: String, CodingKey {
            case frameSize = "frame_size", sampleRate = "sample_rate", bookSizes = "book_sizes"
            case contextFrames = "context_frames"
        }
    }

    public let format: String
    public let prompt: Prompt
    public let tokens: Tokens
    public let frame: Frame
    public let codec: Codec

    public static func load(_ url: URL) throws -> Audio8Tables {
        let tables: Audio8Tables
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw VoxportError(.io, "cannot read \(url.path): \(error.localizedDescription)")
        }
        do {
            tables = try JSONDecoder().decode(Audio8Tables.self, from: data)
        } catch {
            throw VoxportError(.malformedFile, "\(url.path) is not an Audio8 host table (\(error)): re-export the bundle")
        }
        guard tables.format == format else {
            throw VoxportError(
                .unsupportedFormat, "\(url.path): host table format \(PythonRepr.string(tables.format)), this host reads \(format)")
        }
        guard tables.codec.bookSizes.count == tables.frame.numCodebooks else {
            throw VoxportError(.malformedFile, "\(url.path): \(tables.codec.bookSizes.count) book sizes for \(tables.frame.numCodebooks) codebooks")
        }
        return tables
    }
}
