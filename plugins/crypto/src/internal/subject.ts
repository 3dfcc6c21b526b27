import { CryptoErrorCode, CryptoLimits, cryptoError } from '../errors.js';

/** Refuses a subject argument that is not a non-empty string within the length limit. */
export function checkSubject(subject: unknown, option = 'subject'): asserts subject is string {
  if (
    typeof subject !== 'string' ||
    subject.length === 0 ||
    subject.length > CryptoLimits.subjectLengthMax
  ) {
    throw cryptoError(
      CryptoErrorCode.INVALID_ARGUMENT,
      `${option} must be a non-empty string of at most ${CryptoLimits.subjectLengthMax} code units, got ${typeof subject === 'string' ? `${subject.length} code units` : typeof subject}`,
      { option },
    );
  }
}

/** The error of a write for a subject that was forgotten. */
export function forgottenError(subject: string) {
  return cryptoError(
    CryptoErrorCode.SUBJECT_FORGOTTEN,
    `subject '${subject}' was forgotten (erased): no new data is encrypted for it. Erasure is final; write without its sensitive fields, or under another subject`,
    { subject },
  );
}
