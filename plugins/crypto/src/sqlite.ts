export { SqliteKeyring, type SqliteKeyringOptions } from './sqlite-keyring.js';
