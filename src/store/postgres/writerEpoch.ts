import type pg from "pg";
import { WriterEpochLostError } from "../../errors/writerEpoch.js";

/**
 * The writer epoch: a number in `meta` that each writer raises when it takes the writer lock, and
 * that each of its write transactions reads back first with FOR SHARE. The advisory lock lives on a
 * connection of its own and is only checked before BEGIN; if that connection dies unnoticed, a second
 * writer can take the lock while the first still commits. With the epoch, the second writer's raise
 * waits for the first writer's transactions in flight, and every later one of the first writer sees
 * a newer epoch and stops. Note: transaction-mode poolers (PgBouncer) cannot carry the session's
 * advisory lock; the epoch still keeps two writers from interleaving.
 */
export async function takeWriterEpoch(client: pg.ClientBase): Promise<string> {
  const { rows } = await client.query(
    `INSERT INTO meta (key, value) VALUES ('writer_epoch', '1')
     ON CONFLICT (key) DO UPDATE SET value = ((meta.value)::bigint + 1)::text
     RETURNING value`,
  );
  return rows[0].value as string;
}

/** Inside a write transaction, before it writes: throws WriterEpochLostError when another writer took over. */
export async function checkWriterEpoch(
  client: pg.ClientBase,
  epoch: string,
  location: string,
): Promise<void> {
  const { rows } = await client.query(
    "SELECT value FROM meta WHERE key = 'writer_epoch' FOR SHARE",
  );
  const current = rows[0]?.value as string | undefined;
  if (current === epoch) return;
  throw new WriterEpochLostError(
    `Another writer took over ${location} (writer epoch ${current ?? "gone"}, ours ${epoch}): stopping without writing`,
  );
}
