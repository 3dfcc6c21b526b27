/** Order among waiting tasks: strict priority, then round-robin across keys, FIFO within a key. */
export type Priority = 'high' | 'normal' | 'low';
