/** Who writes a database: recorded in its `meta` table so a refused second writer can name it. */
export type WriterHolder = { pid: number; host: string; command: string; startedAt: string };
