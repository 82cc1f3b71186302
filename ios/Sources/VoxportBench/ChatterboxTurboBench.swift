import VoxportHost

// Chatterbox Turbo's benches: the shared T3 + S3Gen benches (S3GenBench.swift) over
// `ChatterboxTurboPipeline` (GPT-2 T3, one row, no CFG; the flow's mean-flow loop, 2 steps).

/// `chatterbox_turbo.t3`: the first chunk's T3 loop (one row; top-k, top-p, then the penalty).
public final class ChatterboxTurboT3Bench: S3GenT3Bench<ChatterboxTurboPipeline>, BenchCase {
    public static let name = "chatterbox_turbo.t3"
}

/// `chatterbox_turbo.estimator`: the mean-flow loop, one `flow_estimator` call per step (batch 1, `r` fed).
public final class ChatterboxTurboEstimatorBench: S3GenEstimatorBench<ChatterboxTurboPipeline>, BenchCase {
    public static let name = "chatterbox_turbo.estimator"
}

/// `chatterbox_turbo.vocoder`: HiFT (S3Gen's, shared with Chatterbox) on the first chunk's mel.
public final class ChatterboxTurboVocoderBench: S3GenVocoderBench<ChatterboxTurboPipeline>, BenchCase {
    public static let name = "chatterbox_turbo.vocoder"
}

/// `chatterbox_turbo.speak`: every chunk through the whole host (`ChatterboxTurboSpeaker` with `VP_TEXT`).
public final class ChatterboxTurboSpeakBench: S3GenSpeakBench<ChatterboxTurboPipeline>, BenchCase {
    public static let name = "chatterbox_turbo.speak"
}

/// `chatterbox_turbo.text`: `VP_TEXT` through Turbo's front end alone (`ChatterboxTurboText`).
public final class ChatterboxTurboTextBench: BudgetedTextBench<ChatterboxTurboPipeline>, BenchCase {
    public static let name = "chatterbox_turbo.text"
}
