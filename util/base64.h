/*
 * base64.h - standard base64 (RFC 4648, with padding) for the wire, where
 * PNG images and model packages travel inside JSON strings.
 */
#ifndef VKINR_BASE64_H
#define VKINR_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Encoded length without the terminating NUL. */
size_t base64_encoded_size(size_t n);
/* Returns a malloc'ed NUL-terminated string, NULL when out of memory. */
char *base64_encode(const void *data, size_t n);
/*
 * Decodes into a malloc'ed buffer. Returns 0, or ERR_FORMAT for a character
 * outside the alphabet, bad padding or a bad length, ERR_NOMEM.
 */
int base64_decode(const char *text, size_t len, uint8_t **out, size_t *outlen);

#endif
