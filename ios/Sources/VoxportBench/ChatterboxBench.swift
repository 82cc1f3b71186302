import VoxportHost

// Chatterbox's benches: the shared T3 + S3Gen benches (S3GenBench.swift) over `ChatterboxPipeline`
// (CFG T3 with min-p; the flow's Euler loop with CFG, 10 steps).

/// `chatterbox.t3`: the first chunk's T3 loop, CFG (a batch of 2) and sampling on the host.
public final class ChatterboxT3Bench: S3GenT3Bench<ChatterboxPipeline>, BenchCase {
    public static let name = "chatterbox.t3"
}

/// `chatterbox.estimator`: the CFM's Euler loop with CFG (`steps` calls of `flow_estimator`, batch 2).
public final class ChatterboxEstimatorBench: S3GenEstimatorBench<ChatterboxPipeline>, BenchCase {
    public static let name = "chatterbox.estimator"
}

/// `chatterbox.vocoder`: HiFT on the first chunk's mel.
public final class ChatterboxVocoderBench: S3GenVocoderBench<ChatterboxPipeline>, BenchCase {
    public static let name = "chatterbox.vocoder"
}

/// `chatterbox.speak`: every chunk through the whole host (`ChatterboxSpeaker` with `VP_TEXT`).
public final class ChatterboxSpeakBench: S3GenSpeakBench<ChatterboxPipeline>, BenchCase {
    public static let name = "chatterbox.speak"
}

/// `chatterbox.text`: `VP_TEXT` through Chatterbox's front end alone (`ChatterboxText`).
public final class ChatterboxTextBench: BudgetedTextBench<ChatterboxPipeline>, BenchCase {
    public static let name = "chatterbox.text"
}
