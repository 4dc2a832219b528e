-- One durable single-row upsert per transaction: the hub's PUT installation, as PostgreSQL
-- alone can take it. Each statement commits on its own (synchronous_commit on, the server's
-- default). Random ids, so nearly every one is an insert. :json_bytes (given with -D by the
-- bench) is the size of the PUT body in Benchmarks/scripts/put-installation.http.
-- make bench-cluster runs it with -c 32 -j 2 (the hub's load has 32 connections).
\set n random(1, 1000000000)
INSERT INTO installation (hub, id, json)
    VALUES ('breakingnews', 'p' || (:n)::text, repeat('x', (:json_bytes)::int))
    ON CONFLICT (hub, id) DO UPDATE SET json = excluded.json;
