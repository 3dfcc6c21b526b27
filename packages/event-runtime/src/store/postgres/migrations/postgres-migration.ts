/**
 * One numbered, append-only schema change. `statements` gets the quoted schema name and returns
 * the DDL to run, in order. The runner (`migrate.ts`) runs them in one transaction together with
 * setting `loom_schema_version.version` to `version`, so the version row and the tables can
 * never disagree. Migration 1 creates that table.
 */
export interface PostgresMigration {
  /** `NNNN-title`, as the file is named. */
  readonly name: string;
  /** The schema version this migration leaves behind (its number). */
  readonly version: number;
  readonly statements: (quotedSchema: string) => readonly string[];
}
