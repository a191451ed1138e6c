/*
 * quota.c - the effective value of each limit a test may lower (see
 * quota.h). The compiled-in values (proto/protocol.h) are the documented
 * ones; an environment variable can only make a limit smaller, so it
 * cannot be used to weaken the daemon.
 */
#include "loop/quota.h"

#include <stdlib.h>
#include <sys/resource.h>

#include "log.h"
#include "proto/protocol.h"

static int from_env(const char *name, int limit)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return limit;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 1 || v > limit) {
		log_warn("%s=%s ignored: it may only lower the limit, to 1..%d",
			 name, s, limit);
		return limit;
	}
	log_info("%s: limit lowered to %ld", name, v);
	return (int)v;
}

int quota_connections(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_MAX_CONNECTIONS", LIMIT_CONNECTIONS);
	return v;
}

int quota_connections_per_uid(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_MAX_CONNECTIONS_PER_UID",
			     LIMIT_CONNECTIONS_PER_UID);
	return v;
}

int quota_jobs_per_uid(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_MAX_JOBS_PER_UID", LIMIT_JOBS_PER_UID);
	return v;
}

int quota_partial_bytes_per_uid(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_MAX_PARTIAL_BYTES_PER_UID",
			     (int)LIMIT_PARTIAL_BYTES_PER_UID);
	return v;
}

int quota_partial_bytes(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_MAX_PARTIAL_BYTES",
			     (int)LIMIT_PARTIAL_BYTES);
	return v;
}

int quota_requests_per_uid(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_MAX_REQUESTS_PER_UID",
			     LIMIT_REQUESTS_PER_UID);
	return v;
}

long long quota_disk_bytes_per_uid(void)
{
	static long long v;
	if (v)
		return v;
	v = (long long)LIMIT_DISK_BYTES_PER_UID;
	const char *s = getenv("VKINRD_DISK_BYTES_PER_UID");
	if (s && *s) {
		char *end;
		long long n = strtoll(s, &end, 10);
		if (*end || n < 1 || n > v)
			log_warn("VKINRD_DISK_BYTES_PER_UID=%s ignored: it may "
				 "only lower the quota, to 1..%lld",
				 s, v);
		else
			v = n;
	}
	return v;
}

int quota_disk_files_per_uid(void)
{
	static int v;
	if (!v)
		v = from_env("VKINRD_DISK_FILES_PER_UID",
			     LIMIT_DISK_FILES_PER_UID);
	return v;
}

/* QUOTA_FD_RESERVE, or what VKINRD_FD_RESERVE lowers it to (0: none). */
static int fd_reserve(void)
{
	static int reserve = -1;
	if (reserve >= 0)
		return reserve;
	const char *s = getenv("VKINRD_FD_RESERVE");
	char *end = NULL;
	long v = s && *s ? strtol(s, &end, 10) : QUOTA_FD_RESERVE;
	if (s && *s && (*end || v < 0 || v > QUOTA_FD_RESERVE)) {
		log_warn("VKINRD_FD_RESERVE=%s ignored: it may only lower the "
			 "reserve, to 0..%d",
			 s, QUOTA_FD_RESERVE);
		v = QUOTA_FD_RESERVE;
	}
	return reserve = (int)v;
}

long quota_descriptors_short(int fd)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return (rlim_t)fd + fd_reserve() >= rl.rlim_cur ? (long)rl.rlim_cur : 0;
}
