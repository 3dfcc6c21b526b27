export { type KeyringHarness, keyringConformance } from './testing/keyring-conformance.js';
