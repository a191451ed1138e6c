/*
 * notify.h - the service manager's readiness protocol (sd_notify), without
 * libsystemd: one datagram to the AF_UNIX socket named by $NOTIFY_SOCKET.
 *
 * systemd (Type=notify) sets NOTIFY_SOCKET; elsewhere it is unset and
 * notify_send does nothing.
 */
#ifndef VKINR_NOTIFY_H
#define VKINR_NOTIFY_H

/*
 * Sends state ("READY=1", "STOPPING=1", "STATUS=...", newline-separated
 * assignments) to $NOTIFY_SOCKET: a path, or an abstract socket when it
 * starts with '@'. Returns 0 (also when NOTIFY_SOCKET is unset), or a
 * negative error code; a failure is worth a log line, never more.
 */
int notify_send(const char *state);

#endif
