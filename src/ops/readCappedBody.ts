/**
 * Reads at most `maxBytes` of an HTTP response body; past that the rest is dropped unread, so a
 * hostile or runaway answer cannot exhaust memory. `truncated` says the cap was hit.
 */
export async function readCappedBody(response: Response, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  if (response.body === null) return { text: "", truncated: false };
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body.cancel().catch(() => undefined);
    return { text: "", truncated: true };
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
      return { text: "", truncated: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks, size).toString("utf8"), truncated: false };
}
