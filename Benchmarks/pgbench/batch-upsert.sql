-- 100-row upserts, one statement per transaction: what a writer that batches can get out of
-- PostgreSQL. Each transaction takes a block of 100 ids of its own (random, so nearly every
-- row is an insert); rows as in single-row-upsert.sql. :json_bytes is given with -D.
-- make bench-cluster runs it with -c 2 -j 2 and reports rows per second (100 × tps).
\set block random(0, 9999999)
INSERT INTO installation (hub, id, json)
    SELECT 'breakingnews', 'p' || ((:block)::bigint * 100 + i)::text, repeat('x', (:json_bytes)::int)
    FROM generate_series(1, 100) AS i
    ON CONFLICT (hub, id) DO UPDATE SET json = excluded.json;
