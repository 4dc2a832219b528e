import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema, as named migrations that are only ever appended. Each runs in its
/// own transaction under an advisory lock, so nodes starting together migrate once.
extension PostgresHubStore {
    /// A migration: its name, kept in `migration` once applied, and its statements.
    struct Migration {
        let name: String
        let statements: [String]
    }

    static let migrations: [Migration] = [
        Migration(
            name: "v1: installations, registrations, notifications, deliveries, changes",
            statements: [
                "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
                """
                CREATE TABLE installation (
                    hub text NOT NULL, id text NOT NULL, json text NOT NULL, PRIMARY KEY (hub, id))
                """,
                """
                CREATE TABLE registration (
                    hub text NOT NULL, id text NOT NULL, xml text NOT NULL,
                    created double precision NOT NULL, updated double precision NOT NULL, PRIMARY KEY (hub, id))
                """,
                // `owner` and `lease_until`: the node dispatching it, and until when its claim holds.
                """
                CREATE TABLE notification (
                    seq bigserial PRIMARY KEY, hub text NOT NULL, id text NOT NULL UNIQUE, format text NOT NULL,
                    tags text, body text NOT NULL, headers text NOT NULL, direct_handle text, test boolean NOT NULL,
                    enqueued double precision NOT NULL, state text NOT NULL, started double precision,
                    ended double precision, outcome text NOT NULL, fire_at double precision, direct_handles text,
                    report text, owner text, lease_until double precision NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX notification_unfinished ON notification (seq) WHERE state IN ('Enqueued', 'Processing')",
                "CREATE INDEX notification_scheduled ON notification (fire_at) WHERE state = 'Scheduled'",
                """
                CREATE TABLE delivery (
                    seq bigint PRIMARY KEY, hub text NOT NULL, device text NOT NULL, notification_id text NOT NULL,
                    template text NOT NULL, payload text NOT NULL, delivered double precision NOT NULL, tags text)
                """,
                "CREATE INDEX delivery_device ON delivery (hub, device, seq)",
                "CREATE INDEX delivery_notification ON delivery (notification_id)",
                """
                CREATE TABLE quarantine (
                    seq bigserial PRIMARY KEY, kind text NOT NULL, hub bytea NOT NULL, id bytea NOT NULL, body bytea,
                    reason text NOT NULL, at double precision NOT NULL)
                """,
                """
                CREATE TABLE sandbox_device (
                    hub text NOT NULL, device text NOT NULL, claimed double precision NOT NULL, PRIMARY KEY (hub, device))
                """,
                // What changed, in commit order: other nodes read the rows named here.
                "CREATE TABLE change (seq bigint PRIMARY KEY, kind text NOT NULL, hub text NOT NULL, id text NOT NULL)",
                "INSERT INTO meta (key, value) VALUES ('seq_reserved', '0')",
            ]),
        // A claim's `claimed` is when it was last claimed or renewed: claims nothing used for
        // a week are let go, oldest first.
        Migration(name: "v2: claims by age", statements: ["CREATE INDEX sandbox_device_claimed ON sandbox_device (claimed)"]),
        // Retention: deliveries removed by age (their numbers grow with time), what each
        // device lost kept as its gap, notifications removed once ended long enough.
        Migration(
            name: "v3: retention",
            statements: [
                """
                CREATE TABLE device_gap (
                    hub text NOT NULL, device text NOT NULL, gap_from bigint NOT NULL, gap_through bigint NOT NULL,
                    gap_count bigint NOT NULL, PRIMARY KEY (hub, device))
                """,
                "CREATE INDEX delivery_delivered ON delivery (delivered)",
                "CREATE INDEX notification_ended ON notification (ended) WHERE ended IS NOT NULL",
            ]),
        // The change log pruned behind its readers: how far each node has read it
        // (`position`, noted at `seen`), and the point it was pruned through, which a node
        // that had read less must reload its tables to pass.
        Migration(
            name: "v4: change log pruned behind its readers",
            statements: [
                "CREATE TABLE change_reader (node text PRIMARY KEY, position bigint NOT NULL, seen double precision NOT NULL)",
                "INSERT INTO meta (key, value) VALUES ('change_pruned', '0') ON CONFLICT (key) DO NOTHING",
            ]),
        // Keys that rotate: the generation of the keys each node serves, which
        // `breaking-news hub keys` waits on (the keys themselves stay in `meta`).
        Migration(
            name: "v5: keys served by each node",
            statements: ["ALTER TABLE change_reader ADD COLUMN keys_generation bigint NOT NULL DEFAULT 0"]),
        // The change log numbered from a counter row, whose lock orders commits, in place of an
        // advisory lock and the highest number: a batch of installations is then one
        // statement. Every node must run this version: one of an earlier version numbers
        // from the highest number and would take numbers this counter gives.
        Migration(
            name: "v6: change log numbered from a counter",
            statements: [
                "INSERT INTO meta (key, value) SELECT 'change_seq', COALESCE(MAX(seq), 0)::text FROM change ON CONFLICT (key) DO NOTHING"
            ]),
        // Writes checked against what came after the position they were resolved at
        // (`Resolution`): whether a change since names a record a batch read, and a batch of
        // installation upserts alone, checked and written in one call. Each statement of a
        // PL/pgSQL function reads what was committed before it began. A write is checked
        // first against what is committed, outside the counter's lock, then, once it holds
        // the lock, against the changes committed since: few, so others wait little (checking every change after
        // the position inside the lock held the other nodes' commits behind it). A position behind the point the log was pruned through (a node
        // paused past the live window) is always moved: its node then reloads its tables.
        // Ids and hubs are ASCII (`HubId`): lower() in the "C" collation
        // folds them as the hub does, whatever the database's locale. The check keeps one
        // generic plan that reads a range of the change log's key (PostgreSQL otherwise
        // planned it afresh at each call, and planning cost more than running).
        Migration(
            name: "v7: writes checked against changes since their resolution",
            statements: [PostgresRoutine.changedSince.definition, PostgresRoutine.putInstallations.definition]),
        // A dispatch recorded in one call: its deliveries numbered after the highest number
        // under the deliveries lock, written, its notifications' states, and the wake-up of
        // the other nodes, where it took five statements in a transaction. The lock is
        // taken by the first statement; the highest number is read by the next, which sees
        // every delivery committed before the lock was granted. Deliveries carrying a
        // number keep it, and are skipped when it is taken; the others are numbered in
        // order, and skipped when their device has that notification from that template (a
        // dispatch another node repeated: looked up among the deliveries of the batch's
        // notifications, by index; checked row by row against the whole log, PostgreSQL
        // hashed the log, at a cost that grew with it). Returns the
        // highest number before the call and the positions (from 1) of the deliveries not
        // written. Its statements read by index only: the plan PostgreSQL keeps for a
        // session's calls, made while the tables were small, otherwise read the
        // notifications' states in a way that grew with the table, not by index.
        Migration(
            name: "v8: a dispatch recorded in one call", statements: [PostgresRoutine.recordDispatches.definition]),
        // Writes that commit before they answer, in one round trip: procedures that make the
        // write, COMMIT, and return what it answers. A statement run by itself is answered
        // at its CommandComplete, which PostgreSQL sends before the commit that ends it
        // (postgres-nio hands the answer over then, so an error of that commit came too
        // late); BEGIN, the statement and COMMIT took three round trips. A COMMIT inside a
        // procedure raises its error in the CALL, before its answer. They run the statements
        // a node of v8 runs between BEGIN and COMMIT (`put_installations`,
        // `record_dispatches`, the insert at the head of the change log, the insert of
        // notifications), so such a node may run beside this version.
        Migration(
            name: "v9: writes committed in the call that makes them",
            statements: [
                PostgresRoutine.commitPutAtHead.definition, PostgresRoutine.commitPutInstallations.definition,
                PostgresRoutine.insertNotifications.definition, PostgresRoutine.commitNotifications.definition,
                PostgresRoutine.commitDispatches.definition,
            ]),
        // Deliveries cut by age through their numbers (`prune`: up to the first delivery
        // younger than the horizon, read in the primary key's order), not through an index of
        // their times: one index fewer on every delivery written (a send to many terminals
        // writes one index entry fewer per delivery). A node of v9
        // beside this version still cuts by the times, reading the table whole once a pass. The
        // drop holds the table's lock for a moment.
        Migration(
            name: "v10: deliveries cut by age through their numbers", statements: ["DROP INDEX IF EXISTS delivery_delivered"]),
        // Numbers that never go back. The highest delivery number given is kept apart from the
        // rows (`meta` 'delivery_high'): numbering took the highest row's, so a log that
        // retention emptied began again at 1 in the same epoch, and every terminal, resuming
        // after its old number, got nothing. The mark starts at what the rows, the gaps
        // retention told (what it removed) and the reservation reach; `record_dispatches`
        // numbers above all three and moves the mark in the same call, under the deliveries
        // lock, and refuses numbers past 2^62 (a value no log reaches: one there was written
        // by hand) with `numeric_value_out_of_range`, which a node takes as final.
        // `starts`: how many starts of a node began a send's dispatch without finishing it.
        Migration(
            name: "v11: a durable delivery high-water mark, dispatch starts",
            statements: [
                """
                INSERT INTO meta (key, value)
                SELECT 'delivery_high', GREATEST(
                    (SELECT COALESCE(MAX(seq), 0) FROM delivery), (SELECT COALESCE(MAX(gap_through), 0) FROM device_gap),
                    COALESCE((SELECT CASE WHEN value ~ '^[0-9]{1,18}$' THEN value::bigint END FROM meta
                        WHERE key = 'seq_reserved'), 0))::text
                ON CONFLICT (key) DO NOTHING
                """,
                "ALTER TABLE notification ADD COLUMN starts integer NOT NULL DEFAULT 0",
                PostgresRoutine.recordDispatches.definition,
            ]),
        // A claim's secret, which its terminal proves with every stream, inbox and release: the
        // digest only (`BuiltInPushClaim.digest`). Claims made before have none until claimed again.
        Migration(
            name: "v12: claim secrets", statements: ["ALTER TABLE sandbox_device ADD COLUMN secret_hash text"]),
        countersTyped,
        // The routines that refuse sequential reads compile nothing: a refused read's cost
        // passed the JIT thresholds, and each call compiled its statements (`byIndexOnly`).
        Migration(
            name: "v14: routines that read by index only, without JIT",
            statements: [PostgresRoutine.changedSince.definition, PostgresRoutine.recordDispatches.definition]),
        compactLog,
    ]
}
