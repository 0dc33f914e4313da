import { SCHEMA_V8 } from "../../sqlite/migrations/schemaV8.js";

/** Postgres schema 8, as SQLite's (src/store/schemaV8.ts): the same statements serve both. */
export const POSTGRES_SCHEMA_V8 = SCHEMA_V8;
