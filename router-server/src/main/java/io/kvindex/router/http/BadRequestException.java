package io.kvindex.router.http;

/** A request body the service cannot use; answered with status 400. Immutable. */
final class BadRequestException extends IllegalArgumentException {
  BadRequestException(String message) {
    super(message);
  }
}
