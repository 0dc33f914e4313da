import { describe, expect, test } from "vitest";
import { redactDatabaseUrl, redactText } from "../../src/ops/redact.js";

describe("redacting Postgres URLs", () => {
  test("keeps host, port and database; drops user, password and parameters, also inside free text", () => {
    expect(redactDatabaseUrl("postgres://app:s3cret@db.internal:5432/payments?sslpassword=x")).toBe(
      "postgres://***@db.internal:5432/payments?***",
    );
    expect(redactDatabaseUrl("postgresql://db/payments")).toBe("postgresql://db/payments");
    expect(redactText('connect failed for "postgres://app:s3cret@db:5432/x" (timeout)')).toBe(
      'connect failed for "postgres://***@db:5432/x" (timeout)',
    );
  });
});
