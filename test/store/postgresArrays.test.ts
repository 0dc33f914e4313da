import pg from "pg";
import { afterAll, expect, test } from "vitest";
import { arrayLiteral } from "../../src/store/postgres/rowWriter.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";

afterAll(() => stopFileBackends());

test("column arrays reach Postgres exactly: hex, numbers, NULL, and text that needs quoting", async () => {
  const values = [
    "0xabc",
    12,
    null,
    "",
    "NULL",
    "null",
    "a b",
    'say "hi"',
    "back\\slash",
    "x,y",
    "{braces}",
    "ünïcode",
    "malformed: length 3 < 5",
  ];
  const { url, schema } = (await postgresBackend.freshDatabase()) as {
    url: string;
    schema: string;
  };
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT $1::text[] AS a", [
      arrayLiteral(
        values.map((v) => [v]),
        0,
      ),
    ]);
    expect(rows[0].a).toEqual(values.map((v) => (v === null ? null : String(v))));
    expect(schema).toMatch(/^fi_/);
  } finally {
    await client.end();
  }
});
