// Versioned schema migrations for the SQLite storage of Durable Objects.

/**
 * Brings the schema up to date. The version lives in a `schema_meta` table (workerd's SQLite
 * API does not offer `PRAGMA user_version`), so reopening an existing object is a no-op.
 */
export function migrate(storage: DurableObjectStorage, migrations: readonly (readonly string[])[]): void {
  const sql = storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS schema_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)");
  const row = sql.exec<{ value: number }>("SELECT value FROM schema_meta WHERE name = 'version'").toArray()[0];
  for (let version = row?.value ?? 0; version < migrations.length; version++) {
    storage.transactionSync(() => {
      for (const statement of migrations[version] ?? []) sql.exec(statement);
      sql.exec("INSERT INTO schema_meta (name, value) VALUES ('version', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", version + 1);
    });
  }
}
