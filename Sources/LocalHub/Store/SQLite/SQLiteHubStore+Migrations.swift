import Foundation
import GRDB

/// The database's schema, as named migrations that are only ever appended: one function each.
extension SQLiteHubStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: installations, registrations, notifications, deliveries", migrate: migrateV1)
        migrator.registerMigration("v2: epoch of the delivery log", migrate: migrateV2)
        migrator.registerMigration("v3: sequence reservations", migrate: migrateV3)
        migrator.registerMigration("v4: deliveries without the redundant unique index", migrate: migrateV4)
        migrator.registerMigration("v5: quarantine of rows that cannot be loaded", migrate: migrateV5)
        migrator.registerMigration("v6: devices of the built-in push service", migrate: migrateV6)
        migrator.registerMigration("v7: scheduled notifications, direct batches, send reports", migrate: migrateV7)
        migrator.registerMigration("v8: claims by age", migrate: migrateV8)
        migrator.registerMigration("v9: compact delivery log", migrate: migrateV9)
        migrator.registerMigration("v10: dispatch starts", migrate: migrateV10)
        migrator.registerMigration("v11: claim secrets", migrate: migrateV11)
        migrator.registerMigration("v12: counters in a typed single-row table", migrate: migrateV12)
        return migrator
    }

    private static func migrateV1(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE installation (
                    hub TEXT NOT NULL,
                    id TEXT NOT NULL,
                    json TEXT NOT NULL,
                    PRIMARY KEY (hub, id)
                ) WITHOUT ROWID;
                CREATE TABLE registration (
                    hub TEXT NOT NULL,
                    id TEXT NOT NULL,
                    xml TEXT NOT NULL,
                    created REAL NOT NULL,
                    updated REAL NOT NULL,
                    PRIMARY KEY (hub, id)
                ) WITHOUT ROWID;
                CREATE TABLE notification (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    hub TEXT NOT NULL,
                    id TEXT NOT NULL UNIQUE,
                    format TEXT NOT NULL,
                    tags TEXT,
                    body TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    direct_handle TEXT,
                    test INTEGER NOT NULL,
                    enqueued REAL NOT NULL,
                    state TEXT NOT NULL,
                    started REAL,
                    ended REAL,
                    outcome TEXT NOT NULL
                );
                CREATE INDEX notification_unfinished ON notification(state) WHERE state IN ('Enqueued', 'Processing');
                CREATE TABLE delivery (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    hub TEXT NOT NULL,
                    device TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    template TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    delivered REAL NOT NULL,
                    tags TEXT,
                    UNIQUE (hub, device, notification_id, template)
                );
                CREATE INDEX delivery_device ON delivery(hub, device, seq);
                """)
    }

    private static func migrateV2(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID")
        try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('epoch', ?)", arguments: [HubEpoch.make()])
    }

    private static func migrateV3(_ db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO meta (key, value) VALUES ('seq_reserved', '0')")
    }

    /// A notification's deliveries and its final state are written in one transaction, and
    /// only notifications without that state are dispatched again: the wide unique index
    /// on (hub, device, notification, template) guarded nothing and cost every insert.
    private static func migrateV4(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE delivery_v4 (
                    seq INTEGER PRIMARY KEY,
                    hub TEXT NOT NULL,
                    device TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    template TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    delivered REAL NOT NULL,
                    tags TEXT
                );
                INSERT INTO delivery_v4 SELECT seq, hub, device, notification_id, template, payload, delivered, tags FROM delivery;
                DROP TABLE delivery;
                ALTER TABLE delivery_v4 RENAME TO delivery;
                CREATE INDEX delivery_device ON delivery(hub, device, seq);
                """)
    }

    /// A stored row that no longer loads is moved here, whole, instead of keeping the hub
    /// from starting.
    private static func migrateV5(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE quarantine (
                    seq INTEGER PRIMARY KEY,
                    kind TEXT NOT NULL,
                    hub BLOB NOT NULL,
                    id BLOB NOT NULL,
                    body BLOB,
                    reason TEXT NOT NULL,
                    at REAL NOT NULL
                )
                """)
    }

    /// Tokens terminals claimed for the built-in push service: a hub with APNs credentials
    /// sends every other APNs token to Apple.
    private static func migrateV6(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE sandbox_device (
                    hub TEXT NOT NULL,
                    device TEXT NOT NULL,
                    claimed REAL NOT NULL,
                    PRIMARY KEY (hub, device)
                ) WITHOUT ROWID
                """)
    }

    /// Scheduled sends wait in the notification table, state 'Scheduled', until fire_at.
    /// A direct batch's handles, as a JSON array; the first devices' outcomes of a send.
    private static func migrateV7(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE notification ADD COLUMN fire_at REAL;
                ALTER TABLE notification ADD COLUMN direct_handles TEXT;
                ALTER TABLE notification ADD COLUMN report TEXT;
                CREATE INDEX notification_scheduled ON notification(fire_at) WHERE state = 'Scheduled';
                """)
    }

    /// A claim's `claimed` is when it was last claimed or renewed: claims nothing used for
    /// a week are let go, oldest first.
    private static func migrateV8(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX sandbox_device_claimed ON sandbox_device(claimed)")
    }

    /// The delivery log in bytes, not kilobytes: a rendered payload once per notification
    /// and template (`payload`), each device once (`device_ref`, which also keeps what
    /// retention took from it), and a delivery three numbers. The old table is copied
    /// (`DeliveryLogCopy`), the indexes made after.
    private static func migrateV9(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE device_ref (
                    id INTEGER PRIMARY KEY,
                    hub TEXT NOT NULL,
                    device TEXT NOT NULL,
                    gap_from INTEGER,
                    gap_through INTEGER,
                    gap_count INTEGER NOT NULL DEFAULT 0
                );
                CREATE UNIQUE INDEX device_ref_name ON device_ref(hub, device);
                CREATE TABLE payload (
                    id INTEGER PRIMARY KEY,
                    hub TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    template TEXT NOT NULL,
                    tags TEXT,
                    delivered REAL NOT NULL,
                    body TEXT NOT NULL,
                    last_seq INTEGER NOT NULL
                );
                ALTER TABLE delivery RENAME TO delivery_v8;
                CREATE TABLE delivery (seq INTEGER PRIMARY KEY, device INTEGER NOT NULL, payload INTEGER NOT NULL);
                """)
        try DeliveryLogCopy.copy(from: "delivery_v8", in: db)
        try db.execute(
            sql: """
                DROP TABLE delivery_v8;
                CREATE INDEX delivery_by_device ON delivery(device, seq);
                CREATE INDEX payload_delivered ON payload(delivered);
                CREATE INDEX notification_ended ON notification(ended) WHERE ended IS NOT NULL;
                """)
    }

    /// How many starts of the hub began a send's dispatch without finishing it: one begun
    /// at three is abandoned, never begun again (a send that stops the hub would otherwise
    /// stop it at every start).
    private static func migrateV10(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE notification ADD COLUMN starts INTEGER NOT NULL DEFAULT 0")
    }

    /// A claim's secret, which its terminal proves with every stream, inbox and release: the
    /// digest only (`BuiltInPushClaim.digest`). Claims made before have none until claimed again.
    private static func migrateV11(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE sandbox_device ADD COLUMN secret_hash TEXT")
    }

    /// The delivery log's counters (its epoch and the reservation) as the columns of one row,
    /// in place of text in the key/value `meta`. Values are moved as they are: SQLite keeps
    /// a number as a number, and one that is none is still refused where it is read.
    private static func migrateV12(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE delivery_counter (
                    one INTEGER PRIMARY KEY CHECK (one = 1), epoch TEXT, seq_reserved INTEGER NOT NULL DEFAULT 0);
                INSERT INTO delivery_counter (one, epoch, seq_reserved)
                SELECT 1, (SELECT value FROM meta WHERE key = 'epoch'),
                    COALESCE((SELECT value FROM meta WHERE key = 'seq_reserved'), 0);
                DELETE FROM meta WHERE key IN ('epoch', 'seq_reserved');
                """)
    }
}
