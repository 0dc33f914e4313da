import { Hono } from "hono";
import { count } from "ponder";
import { db } from "ponder:api";
import { transfers } from "ponder:schema";

const app = new Hono();

// The bench counts the rows Ponder stored, as it counts flashindex's, through Ponder's own reader.
app.get("/bench/transfers", async (c) => {
  const [row] = await db.select({ rows: count() }).from(transfers);
  return c.json({ rows: row?.rows ?? 0 });
});

export default app;
