import { pino, type Logger } from "pino";
import type { LogLevel } from "../config/types.js";

export type { Logger };

/** JSON lines to stdout (or the given stream); components take `logger.child({ component })`. */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "flashindex" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
