package io.kvindex.router.http;

/** A request body the service cannot use; answered with status 400. Immutable. */
final class BadRequestException extends RuntimeException {
  BadRequestException(String message) {
    super(message);
  }
}
