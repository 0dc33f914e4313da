/**
 * Reads at most `maxBytes` of an HTTP response body; past that the rest is dropped unread, so a
 * hostile or runaway answer cannot exhaust memory. `truncated` says the cap was hit.
 */
export async function readCappedBody(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  const { bytes, truncated } = await readCappedBytes(response, maxBytes);
  return { text: bytes.toString("utf8"), truncated };
}

/** The same body as bytes. */
async function readCappedBytes(
  response: Response,
  maxBytes: number,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  const none = { bytes: Buffer.alloc(0), truncated: false };
  if (response.body === null) return none;
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body.cancel().catch(() => undefined);
    return { ...none, truncated: true };
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { ...none, truncated: true };
    }
    chunks.push(value);
  }
  // Read as text only: no buffer of its own is needed (the RPC transport's answers: chain/httpPost.ts).
  return { bytes: Buffer.concat(chunks, size), truncated: false };
}
