/*
 * errors.c - message and name tables generated from ERROR_LIST.
 */
#include "proto/errors.h"

const char *error_message(int code)
{
	switch (code) {
	case ERR_OK:
		return "success";
#define X(name, value, msg)                                                    \
	case ERR_##name:                                                       \
		return msg;
		ERROR_LIST(X)
#undef X
	}
	return "unknown error";
}

const char *error_name(int code)
{
	switch (code) {
	case ERR_OK:
		return "OK";
#define X(name, value, msg)                                                    \
	case ERR_##name:                                                       \
		return #name;
		ERROR_LIST(X)
#undef X
	}
	return "UNKNOWN";
}
