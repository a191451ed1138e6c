/*
 * notify.c - sd_notify(3) in a few lines: the daemon tells systemd when it
 * is ready (its workers' devices are up) and when it is stopping.
 *
 * The protocol is one datagram of "KEY=VALUE" lines sent to the AF_UNIX
 * socket in $NOTIFY_SOCKET; a leading '@' names the abstract namespace
 * (the '@' becomes a NUL byte). The sender's credentials are checked by
 * systemd (NotifyAccess=main), so nothing else needs to go with it.
 *
 * It must not block: the socket is non-blocking and a full queue simply
 * loses the message (systemd's own client does the same).
 */
#include "loop/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/errors.h"

int notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path))
		return ERR_INVALID;
	memcpy(addr.sun_path, path, len);
	if (path[0] == '@')
		addr.sun_path[0] = '\0';
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				     len + (path[0] == '/'));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ERR_IO;
	ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
			   (struct sockaddr *)&addr, alen);
	int saved = errno;
	close(fd);
	if (n < 0)
		return saved == ENOMEM || saved == ENOBUFS ? ERR_NOMEM : ERR_IO;
	return 0;
}
