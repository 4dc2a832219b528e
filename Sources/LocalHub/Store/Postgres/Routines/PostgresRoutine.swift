/// A PL/pgSQL function or procedure of the PostgreSQL schema, kept as its current text (one
/// file each): the migrations install it by name (`CREATE OR REPLACE`), and a migration that
/// changes it installs its text again. Older migrations that made it install the current text
/// too, so a new database is made by the same texts an upgraded one ends with.
struct PostgresRoutine: Sendable {
    /// Its name in the schema.
    let name: String
    /// The statement that makes it, or replaces it with this text.
    let definition: String
}

extension PostgresRoutine {
    /// The settings of a routine whose statements read by index only: sequential reads
    /// refused, and no JIT compilation. A refused read keeps its plan but costs 10^10, past
    /// every JIT threshold, so without `jit = off` each statement reading a table without an
    /// index path (a counter's single row) was compiled, with inlining and optimisation, at
    /// every call: tens of milliseconds on statements that take microseconds.
    static let byIndexOnly = "SET enable_seqscan = off SET jit = off"
}
