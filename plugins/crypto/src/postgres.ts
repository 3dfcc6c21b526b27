export { PostgresKeyring, type PostgresKeyringOptions } from './postgres-keyring.js';
