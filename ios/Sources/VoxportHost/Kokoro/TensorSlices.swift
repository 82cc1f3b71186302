import VoxportCore
import VoxportRunner

/// Cutting graph outputs to their real length and padding inputs to a bucket along one axis
/// (`buckets.pad_to` and the pipeline's `[..., :n]` slices), for C-order float32 tensors.
enum TensorSlices {
    /// `t` with axis `axis` resized to `length`: cut, or zero-padded at the end.
    static func resize(_ t: Tensor, axis: Int, to length: Int) throws -> Tensor {
        let v = try t.float32()
        let shape = t.shape
        let outer = shape[..<axis].reduce(1, *), inner = shape[(axis + 1)...].reduce(1, *)
        let n = shape[axis]
        var out = [Float](repeating: 0, count: outer * length * inner)
        let keep = min(n, length) * inner
        for o in 0..<outer {
            let src = o * n * inner, dst = o * length * inner
            for i in 0..<keep { out[dst + i] = v[src + i] }
        }
        var newShape = shape
        newShape[axis] = length
        return Tensor(shape: newShape, storage: .float32(out))
    }

    static func floats(_ values: [Float], _ shape: [Int]) -> Tensor { Tensor(shape: shape, storage: .float32(values)) }
    static func ints(_ values: [Int32], _ shape: [Int]) -> Tensor { Tensor(shape: shape, storage: .int32(values)) }
}
