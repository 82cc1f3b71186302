extension GraphRunner {
    /// Zero the state arrays of `graph` under the default state key (as `run` without `state`).
    public func resetState(graph: String) throws {
        try resetState(graph: graph, state: "default")
    }
}
