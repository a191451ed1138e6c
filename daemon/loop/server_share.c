/*
 * server_share.c - the connections' limits shared between uids.
 *
 * One uid's connections are bounded (LIMIT_CONNECTIONS_PER_UID), but
 * several uids together can still fill the daemon (LIMIT_CONNECTIONS, or
 * the file descriptors short of the daemon's reserve), and the unfinished
 * lines of two uids together can reach LIMIT_PARTIAL_BYTES. Then the uid
 * that holds the most gives way, never one that holds less: a new
 * connection of a uid that has few takes the place of an idle connection
 * of the uid with the most, and past the limit in all it is the biggest
 * holder's largest unfinished line that is refused. Decisions only:
 * server.c sends the errors and closes. Loop thread only.
 */
#include "loop/server_share.h"

#include <stdio.h>

#include "loop/quota.h"
#include "loop/server_internal.h"
#include "proto/protocol.h"

static int counts(const struct peer_conn *c)
{
	return !c->closing && !c->refused;
}

int server_share_count(const struct server *s, uid_t uid, int any)
{
	int n = 0;
	for (const struct peer_conn *c = s->conns; c; c = c->next)
		n += counts(c) && (any || c->uid == uid);
	return n;
}

/* The uid (other than but) with the most counted connections, or bytes
 * of unfinished lines when bytes; its figure in *most. */
static uid_t biggest(const struct server *s, int bytes, size_t *most)
{
	uid_t best = 0;
	*most = 0;
	for (const struct peer_conn *c = s->conns; c; c = c->next) {
		if (!counts(c))
			continue;
		size_t n = 0;
		for (const struct peer_conn *d = s->conns; d; d = d->next)
			if (counts(d) && d->uid == c->uid)
				n += bytes ? d->lb.len : 1;
		if (n > *most) {
			*most = n;
			best = c->uid;
		}
	}
	return best;
}

static int idle(const struct server *s, struct peer_conn *c)
{
	return counts(c) && !c->holds && !c->pending && !c->lb.len &&
	       !c->stash && !(s->ops->busy && s->ops->busy(s->ctx, c));
}

struct peer_conn *server_share_make_room(struct server *s,
					 const struct peer_conn *c)
{
	size_t most;
	uid_t big = biggest(s, 0, &most);
	size_t mine = (size_t)server_share_count(s, c->uid, 0);
	if (big == c->uid || most <= mine)
		return NULL;
	/* the newest idle one of that uid: the list is newest first */
	for (struct peer_conn *d = s->conns; d; d = d->next)
		if (d != c && d->uid == big && idle(s, d))
			return d;
	return NULL;
}

struct peer_conn *server_share_partial(struct server *s, struct peer_conn *c,
				       char *msg, size_t msglen,
				       const char **limit, double *value)
{
	size_t mine = 0, all = 0;
	for (const struct peer_conn *d = s->conns; d; d = d->next)
		if (counts(d)) {
			all += d->lb.len;
			mine += d->uid == c->uid ? d->lb.len : 0;
		}
	int per_uid = quota_partial_bytes_per_uid();
	if (mine > (size_t)per_uid) {
		snprintf(msg, msglen,
			 "the unfinished lines of uid %u's connections pass "
			 "%d bytes (LIMIT_PARTIAL_BYTES_PER_UID); finish one "
			 "request before starting the next",
			 (unsigned)c->uid, per_uid);
		*limit = "LIMIT_PARTIAL_BYTES_PER_UID";
		*value = per_uid;
		return c;
	}
	if (all <= (size_t)quota_partial_bytes())
		return NULL;
	size_t most;
	uid_t big = biggest(s, 1, &most);
	struct peer_conn *victim = c;
	if (big != c->uid && most > mine) {
		for (struct peer_conn *d = s->conns; d; d = d->next)
			if (counts(d) && d->uid == big &&
			    (victim == c || d->lb.len > victim->lb.len))
				victim = d;
	}
	snprintf(msg, msglen,
		 "the daemon holds more than %d bytes of unfinished lines "
		 "(LIMIT_PARTIAL_BYTES), uid %u's the most (%zu bytes); "
		 "finish one request before starting the next, or retry later",
		 quota_partial_bytes(), (unsigned)victim->uid,
		 victim == c ? mine : most);
	*limit = "LIMIT_PARTIAL_BYTES";
	*value = quota_partial_bytes();
	return victim;
}
