extension PostgresRoutine {
    /// A dispatch recorded in one call: its deliveries numbered under the deliveries lock
    /// above the highest number given (the durable mark `delivery_counter.delivery_high`, the
    /// reservation and the rows of both forms of the log) and written in the compact form
    /// (`compactLog`: each device's reference made once, one payload per notification,
    /// template and body of the call, each delivery its number, device and payload), the mark
    /// moved, its notifications' states, and the wake-up of the other nodes. The lock is taken by the first statement; the highest
    /// number is read by the next, which sees every delivery committed before the lock was
    /// granted. Deliveries carrying a number keep it, and are skipped when it is taken; the
    /// others are numbered in order, and skipped when their device has that notification from
    /// that template (a dispatch another node repeated: looked up among the device's deliveries
    /// within the numbers of that notification's payloads, by index, and among the rows not yet
    /// copied from the earlier form). Numbers past 2^62 are refused with
    /// `numeric_value_out_of_range`, which a node takes as final. Returns the highest number
    /// before the call and the positions (from 1) of the deliveries not written. Its
    /// statements read by index only, never compiled (`byIndexOnly`).
    static let recordDispatches = PostgresRoutine(
        name: "record_dispatches",
        definition: """
            CREATE OR REPLACE FUNCTION record_dispatches(
                numbers bigint[], hubs text[], devices text[], notification_ids text[], template_names text[],
                payloads text[], times double precision[], tag_lists text[], untagged boolean[],
                state_ids text[], state_names text[], start_times double precision[], end_times double precision[],
                outcome_counts text[], report_texts text[], unreported boolean[], wake text)
            RETURNS TABLE (high bigint, skipped bigint[]) LANGUAGE plpgsql
            \(PostgresRoutine.byIndexOnly) AS $$
            DECLARE
                top bigint := 0;
                reach bigint;
                missed bigint[] := '{}';
                dispatched text[];
            BEGIN
                IF cardinality(numbers) > 0 THEN
                    PERFORM pg_advisory_xact_lock(\(PostgresHubStore.Lock.deliveries.rawValue));
                    dispatched := ARRAY(SELECT DISTINCT z.i FROM unnest(notification_ids, numbers) AS z(i, s) WHERE z.s = 0);
                    top := GREATEST((SELECT GREATEST(seq_reserved, delivery_high) FROM delivery_counter),
                        (SELECT COALESCE(MAX(seq), 0) FROM delivery), (SELECT COALESCE(MAX(seq), 0) FROM delivery_v1));
                    reach := GREATEST(top + (SELECT count(*) FROM unnest(numbers) AS z(s) WHERE z.s = 0),
                        (SELECT MAX(z.s) FROM unnest(numbers) AS z(s)));
                    IF top < 0 OR reach > \(StoredRange.sequence.upperBound) OR (SELECT MIN(z.s) FROM unnest(numbers) AS z(s)) < 0 THEN
                        RAISE EXCEPTION 'delivery numbers would reach %, past 2^62 (the log''s numbers reach %)', reach, top
                            USING ERRCODE = 'numeric_value_out_of_range';
                    END IF;
                    INSERT INTO device_ref (hub, device)
                    SELECT DISTINCT z.h, z.d FROM unnest(hubs, devices) AS z(h, d)
                    WHERE NOT EXISTS (SELECT 1 FROM device_ref r WHERE r.hub = z.h AND r.device = z.d)
                    ON CONFLICT (hub, device) DO NOTHING;
                    WITH given AS (
                        SELECT x.n, x.h, x.d, x.i, x.t, x.p, x.w, CASE WHEN x.nt THEN NULL ELSE x.g END AS g,
                            x.s = 0 AS fresh,
                            CASE WHEN x.s = 0 THEN top + count(*) FILTER (WHERE x.s = 0) OVER (ORDER BY x.n)
                                ELSE x.s END AS num
                        FROM unnest(numbers, hubs, devices, notification_ids, template_names, payloads, times,
                            tag_lists, untagged) WITH ORDINALITY AS x(s, h, d, i, t, p, w, g, nt, n)),
                    earlier AS MATERIALIZED (
                        SELECT e.id, e.hub, e.notification_id, e.template, e.first_seq, e.last_seq FROM payload e
                        WHERE e.notification_id = ANY(dispatched)),
                    kept AS MATERIALIZED (
                        SELECT given.*, r.id AS dev,
                            dense_rank() OVER (ORDER BY given.h, given.i, given.t, given.g, given.w, given.p) AS k
                        FROM given JOIN device_ref r ON r.hub = given.h AND r.device = given.d
                        WHERE CASE WHEN given.fresh THEN
                                NOT EXISTS (
                                    SELECT 1 FROM earlier e JOIN delivery o ON o.device = r.id
                                        AND o.seq BETWEEN e.first_seq AND e.last_seq AND o.payload = e.id
                                    WHERE e.notification_id = given.i AND e.hub = given.h AND e.template = given.t)
                                AND NOT EXISTS (
                                    SELECT 1 FROM delivery_v1 o WHERE o.notification_id = given.i AND o.hub = given.h
                                        AND o.device = given.d AND o.template = given.t)
                            ELSE NOT EXISTS (SELECT 1 FROM delivery o WHERE o.seq = given.num)
                                AND NOT EXISTS (SELECT 1 FROM delivery_v1 o WHERE o.seq = given.num) END),
                    shared AS MATERIALIZED (
                        SELECT kept.k, nextval('payload_id_seq') AS id, MIN(kept.num) AS first, MAX(kept.num) AS last,
                            kept.h, kept.i, kept.t, kept.g, kept.w, kept.p
                        FROM kept GROUP BY kept.k, kept.h, kept.i, kept.t, kept.g, kept.w, kept.p),
                    bodies AS (
                        INSERT INTO payload (id, hub, notification_id, template, tags, delivered, body, first_seq, last_seq)
                        SELECT shared.id, shared.h, shared.i, shared.t, shared.g, shared.w, shared.p, shared.first,
                            shared.last FROM shared),
                    added AS (
                        INSERT INTO delivery (seq, device, payload)
                        SELECT kept.num, kept.dev, shared.id FROM kept JOIN shared ON shared.k = kept.k
                        ORDER BY kept.num
                        ON CONFLICT (seq) DO NOTHING
                        RETURNING delivery.seq)
                    SELECT COALESCE(array_agg(given.n ORDER BY given.n), '{}') INTO missed
                    FROM given WHERE NOT EXISTS (SELECT 1 FROM added WHERE added.seq = given.num);
                    UPDATE delivery_counter SET delivery_high = reach WHERE delivery_high < reach;
                    IF cardinality(missed) < cardinality(numbers) THEN
                        PERFORM pg_notify('hub_wake', wake);
                    END IF;
                END IF;
                UPDATE notification AS n SET state = u.s, started = NULLIF(u.st, 'NaN'), ended = NULLIF(u.en, 'NaN'),
                    outcome = u.o, report = CASE WHEN u.rn THEN NULL ELSE u.r END
                FROM unnest(state_ids, state_names, start_times, end_times, outcome_counts, report_texts, unreported)
                    AS u(i, s, st, en, o, r, rn)
                WHERE n.id = u.i;
                RETURN QUERY SELECT top, missed;
            END
            $$
            """)
}
