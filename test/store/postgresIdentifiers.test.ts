import pg from "pg";
import { afterAll, expect, test } from "vitest";
import { connectionConfig } from "../../src/store/postgres/connection.js";
import { migratePostgres } from "../../src/store/postgres/migrations/migrate.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";

afterAll(() => stopFileBackends());

test("the schema name reaches Postgres quoted with the driver's escape: a hostile name is a name, never SQL", async () => {
  const { url } = (await postgresBackend.freshDatabase()) as { url: string };
  const schema = 'Shop "x"; DROP SCHEMA public CASCADE; --\\ y';
  const client = new pg.Client(connectionConfig(url, schema));
  await client.connect();
  try {
    await migratePostgres(client, schema);
    expect((await client.query("SELECT current_schema() AS s")).rows).toEqual([{ s: schema }]);
    const schemas = (
      await client.query(
        "SELECT nspname FROM pg_namespace WHERE nspname IN ('public', $1) ORDER BY nspname",
        [schema],
      )
    ).rows.map((r) => r.nspname);
    expect(schemas).toEqual([schema, "public"].sort());
    expect(
      (await client.query("SELECT COUNT(*)::int AS n FROM schema_migrations")).rows[0].n,
    ).toBeGreaterThan(0);
  } finally {
    await client.end();
  }
});
