// Why an operator action is refused: the message says which field, or which record is missing.

/** A registration the operator asked for that cannot be made; the message says which field. */
export class RegistrationError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'RegistrationError'
  }
}

/** The client, user or grant an operator named does not exist (the admin API's 404). */
export class NoSuchRecordError extends RegistrationError {
  constructor (message: string) {
    super(message)
    this.name = 'NoSuchRecordError'
  }
}
