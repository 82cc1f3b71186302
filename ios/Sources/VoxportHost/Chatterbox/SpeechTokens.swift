/// What `generate` hands S3Gen (`pipeline.speech_tokens_for_s3gen`): the tokens after the last
/// drawn start-of-speech, ids below the 6561 S3 tokens only. (The publisher's
/// drop_invalid_tokens fails on a second start-of-speech; the last one wins here, as in Python.)
public enum SpeechTokens {
    public static let speechVocab = 6561

    public static func dropInvalid(_ tokens: [Int]) -> [Int] {
        var rest = tokens[...]
        if let last = tokens.lastIndex(of: T3Tables.startSpeech) { rest = tokens[(last + 1)...] }
        return rest.filter { $0 < speechVocab }
    }
}
