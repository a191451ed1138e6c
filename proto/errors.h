/*
 * errors.h - the project's error codes, one list for everything.
 *
 * Functions return 0 on success or one of these negative codes (libuv's
 * convention). The X-macro below generates the enum, the message table and
 * the short name that is sent on the wire in a JSON-RPC error's "data".
 * Add a code at the end of the list; never renumber one: clients match them.
 */
#ifndef VKINR_ERRORS_H
#define VKINR_ERRORS_H

#define ERROR_LIST(X)                                                          \
	X(NOMEM, -1, "out of memory")                                          \
	X(IO, -2, "input/output error")                                        \
	X(INVALID, -3, "invalid argument")                                     \
	X(FORMAT, -4, "malformed or unsupported file")                         \
	X(TOO_LARGE, -5, "exceeds a documented limit")                         \
	X(NO_DEVICE, -6, "no usable Vulkan device")                            \
	X(DEVICE_LOST, -7, "the Vulkan device was lost")                       \
	X(DEVICE_OOM, -8, "out of device memory")                              \
	X(VULKAN, -9, "a Vulkan call failed")                                  \
	X(NOT_FOUND, -10, "not found")                                         \
	X(STATE, -11, "not allowed in the current state")                      \
	X(CHECKSUM, -12, "checksum mismatch")                                  \
	X(DIVERGED, -13, "training diverged")                                  \
	X(CANCELLED, -14, "cancelled")                                         \
	X(NO_SPACE, -15, "no space left on device")                            \
	X(PERMISSION, -16, "permission denied")                                \
	X(BUSY, -17, "resource busy")

enum error_code {
	ERR_OK = 0,
#define X(name, value, msg) ERR_##name = (value),
	ERROR_LIST(X)
#undef X
};

/* A sentence fragment for people ("out of device memory"). */
const char *error_message(int code);
/* The stable name used on the wire ("DEVICE_OOM"). */
const char *error_name(int code);

#endif
