/** The answer worker B's model streams word by word in the live-text process test. */
export const liveAnswer = 'Refund of 40 EUR sent to ana@example.com; ticket 4521 is closed now.';
