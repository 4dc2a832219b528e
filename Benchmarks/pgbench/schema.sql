-- The table pgbench writes into: shaped as the hub's own `installation` table
-- (Sources/LocalHub/Store/PostgresHubStore+Migrations.swift, migration v1). Made in a fresh
-- database for each pgbench run, so every run starts empty, as the hub's first run does.
CREATE TABLE installation (hub text NOT NULL, id text NOT NULL, json text NOT NULL, PRIMARY KEY (hub, id));
