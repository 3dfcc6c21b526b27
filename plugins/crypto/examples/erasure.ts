import { InMemoryEventStore } from '@loom/event-runtime';
import { encryptingEventStore, InMemoryKeyring, isErased } from '@loom/plugin-crypto';

// Which fields of which events are personal data, and whose.
const store = encryptingEventStore(new InMemoryEventStore(), {
  keyring: new InMemoryKeyring(),
  sensitive: {
    'customer.registered': { subject: 'customerId', fields: ['email', 'cards[].number'] },
  },
});

await store.append([
  {
    executionId: 'onboarding-8812',
    sequence: 0,
    type: 'customer.registered',
    payload: {
      customerId: 'cus_8812',
      email: 'ada@example.com',
      cards: [{ number: '4111 1111 1111 1111', brand: 'visa' }],
    },
  },
]);
export const before = (await store.read('onboarding-8812'))[0]?.payload;
// The inner store holds ciphertext: { $enc: 'aes-256-gcm', kid: 'cus_8812', kv: 1, iv, ct, tag }.
export const stored = (await store.inner.read('onboarding-8812'))[0]?.payload;

// Right to erasure: destroy the customer's key. Every copy of its fields becomes unreadable.
export const receipt = await store.forget('cus_8812');
export const after = (await store.read('onboarding-8812'))[0]?.payload as {
  email: unknown;
  cards: Array<{ number: unknown; brand: string }>;
};
export const emailErased = isErased(after.email); // true: { $erased: true, subject: 'cus_8812', … }
export const verified = await store.verify('onboarding-8812'); // ok: the chain covers ciphertext
