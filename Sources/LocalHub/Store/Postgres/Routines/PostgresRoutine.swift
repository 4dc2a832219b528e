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
